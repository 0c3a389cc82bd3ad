// A real gate session for ledger tests: the gate binary in front of the recording upstream, one
// allowed call and one refused call per session, so a home holds startup, decision, result and
// shutdown entries written by the production code.
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { cloakpipe, helperScript, writeFiles, PERMIT_ALL } from '../helpers/cli.js';
import { RawGate } from '../helpers/raw-gate.js';

const MANIFEST = `version: 1
release: ledger-test@1
tools:
  echo:
    effect: read
    arguments:
      message: { type: string, max_len: 200, required: true }
`;

let written: Record<string, string> | null = null;
/** The manifest (m.yaml) and a permit-all policy (p.cedar) the sessions use. */
export const files = () => (written ??= writeFiles({ 'm.yaml': MANIFEST, 'p.cedar': PERMIT_ALL }));

/** Runs one gate session on `home`: `allowed` echo calls and one call to an undeclared tool. */
export async function session(home: string, allowed = 1, flags: string[] = []): Promise<string> {
  const f = files();
  const g = new RawGate({ home, manifest: f['m.yaml'], policy: f['p.cedar'], flags, upstream: [process.execPath, helperScript('upstream.js')] });
  await g.initialize();
  let id = 1;
  const call = async (name: string) => {
    const my = id++;
    g.send(JSON.stringify({ jsonrpc: '2.0', id: my, method: 'tools/call', params: { name, arguments: { message: `m${my}` } } }) + '\n');
    let r = await g.next();
    while (r.id !== my) r = await g.next();
    return r;
  };
  for (let i = 0; i < allowed; i++) await call('echo');
  await call('delete_everything');
  await g.end();
  return g.stderr;
}

/** Every entry of the home's ledger, as `ledger show --json` prints it. */
export function entries(home: string): any[] {
  const r = cloakpipe(['ledger', 'show', '--home', home, '--json']);
  if (r.status !== 0) throw new Error(r.stderr);
  return r.stdout.trim().split('\n').filter(Boolean).map((l) => JSON.parse(l));
}

/** Runs fn on the home's ledger.db opened directly (the forger's tool). */
export function tamper<T>(home: string, fn: (db: Database.Database) => T): T {
  const db = new Database(join(home, 'ledger.db'));
  try {
    return fn(db);
  } finally {
    db.close();
  }
}
