// cloakpipe ledger prove SEQ --out FILE: one entry, provable alone (src/ledger/proof.ts). The
// proof is checked with the home's public key before it is written: a tampered entry, or one not
// yet sealed in an epoch, gets no proof.
import { createPublicKey } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { parseFlags, required, UsageError } from './args.js';
import { resolveHome } from '../store/home.js';
import { openLedgerSnapshot } from '../store/sqlite/store.js';
import { canonicalize } from '../core/canonical.js';
import { buildProof, ProveError } from '../ledger/prove.js';
import { verifyProof } from '../ledger/verify/proof.js';

const HELP = `usage: cloakpipe ledger prove SEQ --out FILE [--home DIR]

Writes a proof of entry SEQ that an auditor checks alone, offline, with
\`cloakpipe verify --proof FILE --public-key PEM [--tsa-root PEM] [--rekor-key PEM]\`: the entry,
its RFC 9162 inclusion proof to its epoch's Merkle root, the signed epoch entry and the epoch's
anchors. No other entry is in it, only hashes. The entry must be sealed in an epoch (cloakpipe
ledger anchor seals one). Exit 0 written, 1 no valid proof exists, 2 usage error.
`;

export async function run(argv: string[]): Promise<number> {
  const { values, positionals } = parseFlags(argv, { out: { type: 'string' }, home: { type: 'string' } }, true);
  if (values.help) return void process.stdout.write(HELP), 0;
  if (positionals.length !== 1 || !/^[0-9]{1,15}$/.test(positionals[0])) throw new UsageError('give one entry sequence number: cloakpipe ledger prove SEQ --out FILE');
  const seq = Number(positionals[0]);
  const out = required(values.out, '--out');
  const home = resolveHome(values.home);
  let publicKey;
  try {
    publicKey = createPublicKey(readFileSync(home.pub));
  } catch {
    throw new UsageError(`cannot read the home public key ${home.pub}`);
  }
  const snap = openLedgerSnapshot(home.ledger);
  let proof;
  try {
    proof = buildProof(snap, seq);
  } catch (e) {
    if (!(e instanceof ProveError)) throw e;
    process.stdout.write(`no proof: ${e.message}\n`);
    return 1;
  } finally {
    snap.close();
  }
  const text = canonicalize(proof) + '\n';
  const check = await verifyProof(text, { publicKey });
  if (!check.ok) {
    const f = check.failure!;
    process.stdout.write(`no proof: entry ${seq} does not verify (${f.code}): ${f.detail}\n`);
    return 1;
  }
  writeFileSync(out, text, { mode: 0o644 });
  process.stdout.write(`proof of entry ${seq} (epoch ${check.epoch!.seq}, ${proof.anchors.length} anchors) written to ${out}\n`);
  return 0;
}
