// Running the real `cloakpipe` binary (the compiled CLI) from tests.
import { spawn, spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** The repository root (tests run from dist/test/...). */
export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
export const CLI = join(ROOT, 'dist/src/cli/main.js');
export const EVERYTHING = join(ROOT, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js');
export const MEMORY = join(ROOT, 'node_modules/@modelcontextprotocol/server-memory/dist/index.js');
export const FILESYSTEM = join(ROOT, 'node_modules/@modelcontextprotocol/server-filesystem/dist/index.js');
/** A compiled test helper script (dist/test/helpers/NAME.js). */
export const helperScript = (name: string) => join(ROOT, 'dist/test/helpers', name);
/** Node options that preload an OpenTelemetry SDK (otel-preload.ts) the way an operator installs one. */
export const OTEL_PRELOAD = ['--import', pathToFileURL(helperScript('otel-preload.js')).href];
/** Node options that log every module the process loads to $CLOAKPIPE_TEST_MODULES (module-log-preload.ts). */
export const MODULE_LOG_PRELOAD = ['--import', pathToFileURL(helperScript('module-log-preload.js')).href];

export function cloakpipe(args: string[], opts: { input?: string; env?: NodeJS.ProcessEnv; timeout?: number } = {}): SpawnSyncReturns<string> {
  return spawnSync(process.execPath, [CLI, ...args], {
    encoding: 'utf8',
    input: opts.input,
    env: opts.env ?? process.env,
    timeout: opts.timeout ?? 30_000,
  });
}

/** The binary as a child process, for tests that talk to it (or serve it) while it runs. */
export function cloakpipeAsync(args: string[], env: NodeJS.ProcessEnv = process.env): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const c = spawn(process.execPath, [CLI, ...args], { env });
    let stdout = '';
    let stderr = '';
    c.stdout.on('data', (d) => (stdout += d));
    c.stderr.on('data', (d) => (stderr += d));
    c.on('exit', (status) => resolve({ status, stdout, stderr }));
  });
}

export function tempDir(prefix = 'cloakpipe-test-'): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

/** A fresh, initialized gate home. */
export function makeHome(): string {
  const home = join(tempDir(), 'home');
  const r = cloakpipe(['init', '--home', home]);
  if (r.status !== 0) throw new Error(`init failed: ${r.stderr}`);
  return home;
}

/** A login token file (`--auth-token-file`), owner-only as the gate requires; returns its path. */
export function tokenFile(text: string): string {
  const p = join(tempDir('cloakpipe-tokens-'), 'tokens');
  writeFileSync(p, text, { mode: 0o600 });
  return p;
}

/** Write files into a fresh directory; returns path by name. */
export function writeFiles(files: Record<string, string | object>): Record<string, string> {
  const dir = tempDir('cloakpipe-files-');
  const out: Record<string, string> = {};
  for (const [name, content] of Object.entries(files)) {
    const p = join(dir, name);
    writeFileSync(p, typeof content === 'string' ? content : JSON.stringify(content));
    out[name] = p;
  }
  return out;
}

export const PERMIT_ALL = 'permit (principal, action, resource);\n';

export interface FixtureFiles {
  /** A fresh, initialized gate home. */
  home: string;
  /** The fixture's own directory: its files, the upstream's record, whatever a test adds. */
  dir: string;
  manifest: string;
  policy: string;
  /** The task context file ('' when the fixture has none: the gate runs without --context). */
  context: string;
  /** Where the recording upstream keeps its record of calls (test/helpers/upstream.ts). */
  record: string;
}

/** What every gate fixture starts from: a home, and a manifest, policy and task context in one directory. */
export function fixtureFiles(prefix: string, f: { manifest: string; policy?: string; context?: object; home?: string }): FixtureFiles {
  const dir = tempDir(prefix);
  const at = (name: string, content: string) => (writeFileSync(join(dir, name), content), join(dir, name));
  return {
    home: f.home ?? makeHome(),
    dir,
    manifest: at('manifest.yaml', f.manifest),
    policy: at('policy.cedar', f.policy ?? PERMIT_ALL),
    context: f.context ? at('context.json', JSON.stringify(f.context)) : '',
    record: join(dir, 'record.jsonl'),
  };
}
