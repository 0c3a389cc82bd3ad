// A SoftHSM token behind a module that can stop answering (hanging-token.c, compiled here with the
// machine's C compiler against pkcs11js's PKCS#11 headers): C_Sign, C_Login or C_Initialize wait
// inside the module while `hold(...)` is on, in whichever thread called them; and every login is counted. A hostile token, not a stand-in
// for cloakpipe's code: every call it does answer is SoftHSM's own.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import type { TestContext } from 'node:test';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { CLI, MEMORY, PERMIT_ALL, ROOT, cloakpipe, tempDir, writeFiles } from './cli.js';
import { freshToken, SOFTHSM_MODULE, type Token } from './softhsm.js';

const SOURCE = join(ROOT, 'test/helpers/hanging-token.c');
const HEADERS = join(dirname(createRequire(import.meta.url).resolve('pkcs11js/package.json')), 'includes/pkcs11');

let built: string | undefined;
function module(): string {
  if (built) return built;
  const out = join(tempDir('cloakpipe-hanging-'), 'hanging-token.so');
  const r = spawnSync('cc', ['-shared', '-fPIC', '-Wall', '-I', HEADERS, '-o', out, SOURCE, '-ldl'], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`cannot build the hanging token module: ${r.stderr}`);
  return (built = out);
}

/** The calls the module can hold: C_Sign, C_Login, C_Initialize; `corrupt`: signatures come back with a bit flipped. */
export type Held = 'sign' | 'login' | 'init' | 'corrupt';

export interface HangingToken extends Token {
  /** The module path of the hostile module (in `uri()` already). */
  modulePath: string;
  /** C_Sign (C_Login, C_Initialize) waits inside the module until `answer()`; or, `corrupt`, C_Sign answers wrong until then. */
  hold(what: Held): void;
  answer(what: Held): void;
  /** Signatures of data holding `marker` come back with a bit flipped (null: none do). */
  corruptHolding(marker: string | null): void;
  /** C_Sign with the key labelled `label` waits inside the module, the token's other keys sign (null: none waits). */
  holdKey(label: string | null): void;
  /** Every C_Login the module answered, by its CKR value (0 = CKR_OK, 0xa0 = CKR_PIN_INCORRECT). */
  logins(): number[];
}

export function hangingToken(): HangingToken {
  const t = freshToken();
  const modulePath = module();
  const base = join(tempDir('cloakpipe-hold-'), 'hold');
  return {
    ...t,
    modulePath,
    env: { ...t.env, HANGING_TOKEN_MODULE: SOFTHSM_MODULE, HANGING_TOKEN_FILE: base },
    uri: (object = 'gate') => `pkcs11:token=${t.label};object=${object}?module-path=${modulePath}`,
    hold: (what) => writeFileSync(`${base}.${what}`, ''),
    answer: (what) => rmSync(`${base}.${what}`, { force: true }),
    corruptHolding: (marker) => (marker === null ? rmSync(`${base}.flaky`, { force: true }) : writeFileSync(`${base}.flaky`, marker)),
    holdKey: (label) => (label === null ? rmSync(`${base}.signkey`, { force: true }) : writeFileSync(`${base}.signkey`, label)),
    logins: () => (existsSync(`${base}.logins`) ? readFileSync(`${base}.logins`, 'utf8').split('\n').filter(Boolean).map(Number) : []),
  };
}

/** The command's exit, or null when it is still running `ms` later (it is then killed). */
export function runFor(args: string[], env: NodeJS.ProcessEnv, ms: number): Promise<{ code: number | null; signal: string | null; stderr: string } | null> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI, ...args], { env, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      resolve(null);
    }, ms);
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stderr });
    });
  });
}

/** A home whose gate key is in a hanging token (`held` answered again after the test). */
export function homeOnHangingToken(t: TestContext, held: Held = 'sign'): { tok: HangingToken; env: NodeJS.ProcessEnv; home: string } {
  const tok = hangingToken();
  t.after(() => tok.answer(held));
  const env = { ...process.env, ...tok.env, CLOAKPIPE_PKCS11_PIN: undefined };
  const home = join(tempDir(), 'home');
  const init = cloakpipe(['init', '--home', home, '--key', tok.uri(), '--pin-file', tok.pinFile], { env });
  assert.equal(init.status, 0, init.stderr);
  return { tok, env, home };
}

/** One write tool on server-memory: `create_entities`, its arguments `entity(name)`. */
export const entity = (name: string) => ({ entities: [{ name, entityType: 'note', observations: [] }] });

/**
 * What a gate on that home needs to run server-memory with `create_entities` declared (for
 * startGate or RawGate), and the server's memory file, where a forwarded call leaves its name.
 */
export function memoryGate(tok: HangingToken, home: string, release: string) {
  const memory = join(tempDir(), 'memory.jsonl');
  const manifest = `version: 1\nrelease: ${release}\ntools:\n  create_entities:\n    effect: write\n    arguments:\n      entities: { type: array, max_items: 5, required: true, items: { type: object } }\n`;
  const f = writeFiles({ 'm.yaml': manifest, 'p.cedar': PERMIT_ALL });
  return { memory, options: { home, manifest: f['m.yaml'], policy: f['p.cedar'], flags: ['--pin-file', tok.pinFile], upstream: [process.execPath, MEMORY], env: { ...tok.env, MEMORY_FILE_PATH: memory } } };
}
