// The `cloakpipe` executable: dispatches to one file per command (src/cli/<command>.ts), each
// exporting `run(argv): Promise<number>`. Exit 0 success, 1 a check failed or a call was
// refused, 2 usage or configuration error.
import '../policy/v8-guard.js'; // first: every command that evaluates Cedar needs it
import { readFileSync } from 'node:fs';
import { suggest, UsageError } from './args.js';
import { OutputClosed } from '../util/out/index.js';
import { outputFailed, watchStandardOutput } from './standard-output.js';
import { EXIT_TOKEN_HELD } from '../keys/exit-status.js';

const COMMANDS: Record<string, { file: string; summary: string }> = {
  init: { file: './init.js', summary: 'create the gate home: signing key, ledger and operations databases' },
  'mcp-proxy': { file: './mcp-proxy.js', summary: 'gate every tools/call of a stdio MCP server' },
  'http-proxy': { file: './http-proxy.js', summary: 'gate every tools/call of MCP sessions served over Streamable HTTP' },
  'llm-proxy': { file: './llm-proxy.js', summary: 'gate the tool calls inside OpenAI and Anthropic API responses' },
  fingerprint: { file: './fingerprint.js', summary: "print a call's fingerprint" },
  approve: { file: './approve.js', summary: 'sign an approval receipt for one call' },
  keygen: { file: './keygen.js', summary: 'create an approver key pair' },
  inbox: { file: './inbox.js', summary: 'serve the approval inbox: a local page to approve or deny waiting calls' },
  ops: { file: './ops.js', summary: 'list, show and reconcile operations' },
  ledger: { file: './ledger.js', summary: 'show, export or anchor the ledger' },
  verify: { file: './verify.js', summary: 'verify a ledger offline' },
  anchor: { file: './anchor.js', summary: 'verify one Rekor entry or RFC 3161 token offline' },
  manifest: { file: './manifest-draft.js', summary: "draft a manifest and policy from a server's tools/list" },
  wrap: { file: './wrap.js', summary: "put the gate in front of the servers in an agent host's MCP config" },
  unwrap: { file: './unwrap.js', summary: 'restore the MCP config entries wrap rewrote' },
  shadow: { file: './shadow.js', summary: 'report what enforce would have refused in shadow mode, with the manifest lines to change' },
  policy: { file: './policy.js', summary: 'check or explain a Cedar policy' },
  pins: { file: './pins.js', summary: 'review and accept changed tool definitions' },
  scope: { file: './scope.js', summary: 'report what the evidence establishes per protected effect' },
  confine: { file: './confine.js', summary: 'run one agent session in a no-network container' },
  'confine-control': { file: './confine-control.js', summary: 'send a live restriction to a confined session' },
};

function usage(): string {
  const lines = Object.entries(COMMANDS).map(([n, c]) => `  ${n.padEnd(16)}${c.summary}`);
  return `usage: cloakpipe <command> [options]\n       cloakpipe --version\n\ncommands:\n${lines.join('\n')}\n\nRun 'cloakpipe <command> --help' for a command's options.\n\nExit status: 0 success, 1 a check failed or a call was refused, 2 usage or configuration error,\n${EXIT_TOKEN_HELD}.\n`;
}

/** The package's own version: dist/src/cli/main.js sits three folders below package.json. */
function version(): string {
  return (JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string }).version;
}

async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (!name || name === '--help' || name === '-h' || name === 'help') {
    process.stdout.write(usage());
    return name ? 0 : 2;
  }
  if (name === '--version' || name === '-V' || name === 'version') {
    process.stdout.write(`cloakpipe ${version()}\n`);
    return 0;
  }
  const cmd = Object.prototype.hasOwnProperty.call(COMMANDS, name) ? COMMANDS[name] : undefined;
  if (!cmd) {
    const hit = suggest(name, Object.keys(COMMANDS));
    process.stderr.write(`cloakpipe: unknown command "${name}"${hit ? ` (did you mean "${hit}"?)` : ''}\n${usage()}`);
    return 2;
  }
  let mod: { run: (argv: string[]) => Promise<number> };
  try {
    mod = await import(cmd.file);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ERR_MODULE_NOT_FOUND' && String((e as Error).message).includes(cmd.file.slice(2))) {
      process.stderr.write(`cloakpipe: "${name}" is not available in this build\n`);
      return 2;
    }
    throw e;
  }
  if (name !== 'mcp-proxy') watchStandardOutput();
  try {
    return await mod.run(rest);
  } catch (e) {
    if (e instanceof UsageError) {
      process.stderr.write(`cloakpipe ${name}: ${e.message}\n`);
      return 2;
    }
    throw e;
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (e) => {
    if (e instanceof OutputClosed) return void (process.exitCode = outputFailed(e.cause as Error | undefined, `--out ${e.path}`));
    // Errors here are ours (config, I/O), never payloads: messages are written by our code.
    process.stderr.write(`cloakpipe: ${(e as Error).message}\n`);
    process.exitCode = 2;
  },
);
