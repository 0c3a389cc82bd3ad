// cloakpipe ledger export --out FILE: the self-contained JSONL an auditor verifies with
// `cloakpipe verify --ledger FILE --public-key PEM` (format: src/ledger/export.ts).
import { createPublicKey } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { parseFlags, required, UsageError } from './args.js';
import { resolveHome } from '../store/home.js';
import { openLedgerView } from '../home/open.js';
import { exportLedger } from '../ledger/export.js';

const HELP = `usage: cloakpipe ledger export --out FILE [--home DIR] [--json]

Writes every entry, epoch and anchor of the home's ledger to FILE (JSONL: a header with the gate
public key, the entries in order, then the anchors), atomically.
`;

export async function run(argv: string[]): Promise<number> {
  const { values } = parseFlags(argv, { out: { type: 'string' }, home: { type: 'string' }, json: { type: 'boolean' } });
  if (values.help) return void process.stdout.write(HELP), 0;
  const out = required(values.out, '--out');
  const home = resolveHome(values.home);
  let pub;
  try {
    pub = createPublicKey(readFileSync(home.pub));
  } catch {
    throw new UsageError(`cannot read the home public key ${home.pub}`);
  }
  const snap = openLedgerView({ home: values.home });
  try {
    const r = exportLedger(snap, pub, out);
    process.stdout.write(values.json ? JSON.stringify({ out, ...r }) + '\n' : `exported ${r.entries} entries and ${r.anchors} anchors to ${out}\n`);
  } finally {
    snap.close();
  }
  return 0;
}
