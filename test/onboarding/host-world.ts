// What the wrap suites share: a host's world on disk (the user's HOME, the folder the host
// opened, a gate home) and a file put into it.
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { CLI, makeHome, tempDir } from '../helpers/cli.js';

export interface World {
  home: string; // the user's home (HOME)
  project: string; // the folder the host opened (cwd)
  gate: string; // CLOAKPIPE_HOME
  env: NodeJS.ProcessEnv;
}

export function world(prefix = 'cloakpipe-wrap-'): World {
  const dir = tempDir(prefix);
  const home = join(dir, 'user');
  const project = join(dir, 'project');
  mkdirSync(home);
  mkdirSync(project);
  const gate = makeHome();
  return { home, project, gate, env: { ...process.env, HOME: home, CLOAKPIPE_HOME: gate } };
}

/** Write `text` at `path`, making its folders. */
export function put(path: string, text: string): string {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, text);
  return path;
}

/**
 * A command line for the CLI as these suites run it: the project folder is the test's own, so
 * wrap may start the servers of its configs (--trust-project, ADR 118).
 */
export const trusted = (argv: string[]): string[] => (argv[0] === 'wrap' ? ['wrap', '--trust-project', ...argv.slice(1)] : argv);

/** `cloakpipe wrap|unwrap ARGS` in the world's project folder, as its user runs it. */
export function run(w: World, cmd: 'wrap' | 'unwrap', args: string[] = []) {
  return spawnSync(process.execPath, [CLI, ...trusted([cmd, ...args])], { cwd: w.project, env: w.env, encoding: 'utf8', timeout: 120_000 });
}

/** A server folder of the world's gate home as one written by hand: a manifest and a policy, what its gate loads. */
export function serverHeld(w: World, name: string): void {
  put(join(w.gate, 'servers', name, 'manifest.yaml'), `version: 1\nrelease: ${name}@1\ntools: {}\n`);
  put(join(w.gate, 'servers', name, 'policy.cedar'), '');
}
