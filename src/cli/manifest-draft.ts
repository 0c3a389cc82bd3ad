// cloakpipe manifest draft: a first manifest and Cedar policy from a server's tools/list
// (onboarding.md). The drafting is src/onboarding/; this file is flags and files.
import { ownDescriptor, writeOutput } from '../util/out/index.js';
import { optionsHelp, parseFlags, timerDuration, UsageError, type Options } from './args.js';
import { splitCommandLine } from './upstream-command.js';
import { UPSTREAM_URL_OPTIONS, upstreamHeadersFrom } from './upstream-url.js';
import { checkDraftLoads, draftFromTools, draftSource } from '../onboarding/draft.js';
import { listServerTools, ServerError, type ServerTarget } from '../onboarding/list-tools.js';
import { visible } from './visible.js';

const OPTIONS = {
  out: { type: 'string', arg: 'FILE', help: 'write the manifest to FILE and the policy beside it (FILE with .cedar)', defaultText: 'both to stdout, the policy as a trailing comment' },
  'policy-out': { type: 'string', arg: 'FILE', help: 'write the policy here instead', defaultText: 'beside --out' },
  release: { type: 'string', arg: 'NAME@VERSION', help: "the manifest's release", defaultText: "the server's name@version from initialize" },
  upstream: { type: 'string', arg: '"CMD ARGS"', help: 'the server command as one string (as mcp-proxy --upstream)' },
  'upstream-url': { type: 'string', arg: 'URL', help: "a remote server's Streamable HTTP endpoint instead of a command" },
  'upstream-header': UPSTREAM_URL_OPTIONS['upstream-header'],
  'upstream-header-file': UPSTREAM_URL_OPTIONS['upstream-header-file'],
  timeout: { type: 'string', arg: 'DURATION', default: '30s', help: 'for the server to start and list its tools' },
} satisfies Options;

const HELP = `usage: cloakpipe manifest draft [options] (-- SERVER_COMMAND [ARGS...] | --upstream "CMD ARGS" | --upstream-url URL [--upstream-header-file FILE])

Starts the server, reads its whole tools/list (every page) and prints a v1 manifest declaring
every tool and argument with the rules its inputSchema states (type, enum, RE2-compatible
pattern, lengths, bounds, required), and a Cedar policy permitting exactly those tools. Tools
that may write (readOnlyHint false, destructiveHint true, or no annotations) are marked REVIEW
with approval and operation id as comments; what v1 cannot hold is a comment naming the schema
keyword. Review the draft before running mcp-proxy --mode enforce with it.

options:
${optionsHelp(OPTIONS)}
  --help                          this text
`;

export async function run(argv: string[]): Promise<number> {
  const [sub, ...rest] = argv;
  if (sub === '--help' || sub === undefined) return void process.stdout.write(HELP), sub ? 0 : 2;
  if (sub !== 'draft') throw new UsageError(`unknown subcommand "${sub}" (manifest draft)`);
  const dash = rest.indexOf('--');
  const own = dash >= 0 ? rest.slice(0, dash) : rest;
  let server = dash >= 0 ? rest.slice(dash + 1) : [];
  const { values } = parseFlags(own, OPTIONS);
  if (values.help) return void process.stdout.write(HELP), 0;
  // The policy's file is named after the manifest's: not after a descriptor (/dev/stdout.cedar).
  if (values.out !== undefined && values['policy-out'] === undefined && ownDescriptor(values.out) !== null) throw new UsageError(`--out ${values.out} names a descriptor: give --policy-out too`);
  if (values.upstream !== undefined) {
    if (server.length) throw new UsageError('the server is named twice: --upstream and after --');
    server = splitCommandLine(values.upstream);
  }
  let target: ServerTarget;
  if (values['upstream-url'] !== undefined) {
    if (server.length) throw new UsageError('the server is named twice: --upstream-url and a command');
    let url: URL;
    try {
      url = new URL(values['upstream-url']);
    } catch {
      throw new UsageError('--upstream-url is not a URL');
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new UsageError('--upstream-url must be http: or https:');
    target = { url, headers: upstreamHeadersFrom(values) };
  } else {
    if (values['upstream-header'] !== undefined || values['upstream-header-file'] !== undefined) throw new UsageError('--upstream-header and --upstream-header-file need --upstream-url');
    if (server.length === 0) throw new UsageError('name the server: -- CMD ARGS, --upstream "CMD ARGS" or --upstream-url URL');
    target = { command: server[0], args: server.slice(1) };
  }
  const timeoutMs = timerDuration(values.timeout, '--timeout');
  let listed;
  try {
    listed = await listServerTools(target, timeoutMs);
  } catch (e) {
    if (!(e instanceof ServerError)) throw e;
    process.stderr.write(`cloakpipe manifest draft: ${visible(e.message)}\n`); // the server's own error text
    return 2;
  }
  const release = values.release ?? listed.release;
  const draft = draftFromTools(listed.tools, { release, source: draftSource(target) });
  // The draft must load as the gate loads it: a failure here is a fault of the drafter.
  try {
    checkDraftLoads(draft.manifest);
  } catch (e) {
    if (!(e instanceof Error)) throw e;
    process.stderr.write(`cloakpipe manifest draft: the draft does not load (${e.message}); please report this\n`);
    return 2;
  }
  const out = values.out;
  const policyOut = values['policy-out'] ?? (out === undefined ? undefined : out.replace(/\.(ya?ml|json)$/i, '') + '.cedar');
  if (policyOut !== undefined) await writeOutput(policyOut, draft.policy);
  if (out !== undefined) await writeOutput(out, draft.manifest);
  else if (policyOut !== undefined) process.stdout.write(draft.manifest);
  else process.stdout.write(draft.manifest + '# ---- policy.cedar ----\n' + draft.policy.replace(/^(?=.)/gm, '# ').replace(/^$/gm, '#'));
  if (out !== undefined) process.stderr.write(`cloakpipe manifest draft: ${draft.declared.length} tools → ${out}, policy → ${policyOut}\n`);
  for (const s of draft.skipped) process.stderr.write(`cloakpipe manifest draft: not declared: ${visible(JSON.stringify(s.name))}: ${visible(s.why)}\n`);
  return 0;
}
