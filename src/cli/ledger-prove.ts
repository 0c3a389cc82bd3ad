// cloakpipe ledger prove SEQ --out FILE: one entry, provable alone (src/ledger/proof.ts). The
// proof is checked with the home's public key before it is written: a tampered entry, or one not
// yet sealed in an epoch, gets no proof.
import { createPublicKey } from 'node:crypto';
import { sayTo, writeOutput } from '../util/out/index.js';
import { parseFlags, required, UsageError } from './args.js';
import { openChain } from '../home/open.js';
import { GATE_OPTION, opening, STORE_OPTION } from './store-flags.js';
import { canonicalize } from '../core/canonical.js';
import { buildProof, ProveError } from '../ledger/prove.js';
import { verifyProof } from '../ledger/verify/proof.js';
import { writingOut } from './out-place.js';

const HELP = `usage: cloakpipe ledger prove SEQ --out FILE [--home DIR] [--store URL [--gate NAME]]

Writes a proof of entry SEQ that an auditor checks alone, offline, with
\`cloakpipe verify --proof FILE --public-key PEM [--tsa-root PEM] [--rekor-key PEM]\`: the entry,
its RFC 9162 inclusion proof to its epoch's Merkle root, the signed epoch entry and the epoch's
anchors. No other entry is in it, only hashes. The entry must be sealed in an epoch (cloakpipe
ledger anchor seals one). With --store URL (or CLOAKPIPE_STORE), an entry of this home's gate's
chain in the shared store, or of --gate NAME (checked with the key registered for it).
Exit 0 written, 1 no valid proof exists, 2 usage error.
`;

export async function run(argv: string[]): Promise<number> {
  const { values, positionals } = parseFlags(argv, { out: { type: 'string' }, home: { type: 'string' }, ...STORE_OPTION, ...GATE_OPTION }, true);
  if (values.help) return void process.stdout.write(HELP), 0;
  if (positionals.length !== 1 || !/^[0-9]{1,15}$/.test(positionals[0])) throw new UsageError('give one entry sequence number: cloakpipe ledger prove SEQ --out FILE');
  const seq = Number(positionals[0]);
  const out = required(values.out, '--out');
  const chain = await opening(() => openChain({ home: values.home, store: values.store, gate: values.gate }));
  const snap = chain.snapshot;
  let publicKey;
  try {
    publicKey = createPublicKey(chain.publicKeyPem ?? '');
  } catch {
    snap.close();
    throw new UsageError(chain.keyFrom === 'home' ? 'cannot read the home public key' : `the key registered for gate ${JSON.stringify(chain.gateId)} is not a public key`);
  }
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
  await writingOut(out, () => writeOutput(out, text));
  sayTo(out).write(`proof of entry ${seq} (epoch ${check.epoch!.seq}, ${proof.anchors.length} anchors) written to ${out}\n`);
  return 0;
}
