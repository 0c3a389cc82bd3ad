// cloakpipe ledger export --out FILE: the self-contained JSONL an auditor verifies with
// `cloakpipe verify --ledger FILE --public-key PEM` (format: src/ledger/export.ts). In a fleet's
// shared store, one gate's chain (this home's, or --gate NAME), or --all: one file per gate
// (ADR 029), each verifiable alone against that gate's key.
import { createPublicKey, type KeyObject } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { parseFlags, required, UsageError } from './args.js';
import { openChains, type ChainView } from '../home/open.js';
import { exportLedger } from '../ledger/export.js';
import { markStale, markStaleExcept } from '../ledger/export-folder.js';
import { sayTo } from '../util/out/index.js';
import { GATE_OPTION, opening, shownGate, STORE_OPTION } from './store-flags.js';
import { GATE_ID } from '../store/target.js';
import { writingOut } from './out-place.js';

const HELP = `usage: cloakpipe ledger export --out FILE [--home DIR] [--store URL [--gate NAME]] [--json]
       cloakpipe ledger export --all --out DIR --store URL [--json]

Writes every entry, epoch and anchor of a ledger to FILE (JSONL: a header with the gate public
key, the entries in order, then the anchors), atomically: the home's ledger, or with --store
(or CLOAKPIPE_STORE) the chain of this home's gate in the shared store, or of --gate NAME. With
--all, every registered gate's chain, each to DIR/NAME.jsonl (a header naming the gate and its
registered key), each verified alone: cloakpipe verify --ledger DIR/NAME.jsonl --public-key PEM.
A gate that cannot be exported (a forged registration) is named, and its earlier export in DIR,
if any, renamed NAME.jsonl.stale; so is, named, an earlier export in DIR of a gate the store no
longer registers.
`;

/** Why a registered chain cannot be exported (a row written around init), or its key. */
function keyOf(v: ChainView, all: boolean): KeyObject | string {
  // With --all a name is a file name: only what init accepts.
  if (all && !GATE_ID.test(v.gateId!)) return 'its name in the store is not a valid gate id';
  if (v.publicKeyPem === null) throw new UsageError('cannot read the home public key');
  let key: KeyObject | null = null;
  try {
    key = createPublicKey(v.publicKeyPem);
  } catch {
    // named below
  }
  if (key?.asymmetricKeyType === 'ed25519') return key;
  const problem = key === null ? 'is not a public key' : 'is not an Ed25519 public key';
  if (v.keyFrom === 'home') throw new UsageError(`the home public key ${problem}`);
  if (all) return `the key registered for it in the store ${problem}`;
  throw new UsageError(`the key registered for gate ${JSON.stringify(v.gateId)} ${problem}`);
}

/** Why a gate whose name is `twin`'s but for case is not written: in a case-insensitive folder NAME.jsonl would replace its twin's. */
const caseTwin = (twin: string) => `its name differs from gate ${shownGate(twin)}'s only in case, one file in a case-insensitive folder: export it alone with --gate NAME --out FILE`;

export async function run(argv: string[]): Promise<number> {
  const { values } = parseFlags(argv, { out: { type: 'string' }, home: { type: 'string' }, json: { type: 'boolean' }, all: { type: 'boolean' }, ...STORE_OPTION, ...GATE_OPTION });
  if (values.help) return void process.stdout.write(HELP), 0;
  const out = required(values.out, '--out');
  if (values.all && values.gate !== undefined) throw new UsageError('--all and --gate exclude each other');
  const views = await opening(() => openChains({ home: values.home, store: values.store, gate: values.gate, all: values.all }));
  try {
    if (values.all) {
      try {
        mkdirSync(out, { recursive: true, mode: 0o755 });
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code;
        if (code !== 'EEXIST' && code !== 'ENOTDIR') throw e;
        throw new UsageError(`--out ${out}: with --all it names a folder (one NAME.jsonl a gate), and ${code === 'EEXIST' ? 'it is' : 'a part of its path is'} not a folder`);
      }
      // Before any is written: a run cut short leaves no unregistered gate's file passing for current.
      for (const { gate, stale } of markStaleExcept(out, new Set(views.map((v) => v.gateId!))))
        process.stdout.write(
          values.json
            ? JSON.stringify({ gate, error: 'not registered in the store', stale }) + '\n'
            : `gate ${shownGate(gate)}: not registered in the store; its earlier export is now ${stale}\n`,
        );
    }
    let ok = true;
    const named = new Map<string, string>(); // a file name in a case-insensitive folder -> the gate written there
    for (const v of views) {
      const twin = values.all ? named.get(v.gateId!.toLowerCase()) : undefined;
      if (values.all && twin === undefined) named.set(v.gateId!.toLowerCase(), v.gateId!);
      const key = twin !== undefined ? caseTwin(twin) : keyOf(v, values.all === true);
      if (typeof key === 'string') {
        // One forged registration is that gate's failure, not every other gate's (as verify --store).
        ok = false;
        // A case twin's file may be its twin's, just written: left as it is.
        const stale = values.all && twin === undefined ? markStale(out, v.gateId!) : null;
        process.stdout.write(
          values.json
            ? JSON.stringify({ gate: v.gateId, error: key, ...(stale ? { stale } : {}) }) + '\n'
            : `gate ${shownGate(v.gateId!)}: not exported: ${key}${stale ? `; its earlier export is now ${stale}` : ''}\n`,
        );
        continue;
      }
      const file = values.all ? join(out, `${v.gateId!}.jsonl`) : out;
      const r = await writingOut(file, () => exportLedger(v.snapshot, key, file, v.gateId ?? undefined));
      const who = v.gateId === null ? '' : ` of gate ${v.gateId}`;
      sayTo(file).write(
        values.json ? JSON.stringify({ out: file, ...(v.gateId !== null ? { gate: v.gateId } : {}), ...r }) + '\n' : `exported ${r.entries} entries and ${r.anchors} anchors${who} to ${file}\n`,
      );
    }
    if (values.all && views.length === 0) process.stdout.write(values.json ? '' : 'no gate is registered in the store\n');
    return ok ? 0 : 1;
  } finally {
    for (const v of views) v.snapshot.close();
  }
}
