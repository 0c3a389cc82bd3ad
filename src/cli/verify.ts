// cloakpipe verify: the ledger's offline audit (product.md section 7). Thin: flags, the library's
// verifyLedger, a progress bar on a terminal, one summary or one failure line. Exit 0 all holds,
// 1 a check failed (the first bad entry and why), 2 usage or configuration error.
import { readFileSync } from 'node:fs';
import { parseFlags, UsageError } from './args.js';
import { resolveHome } from '../store/home.js';
import { AnchorError } from '../ledger/anchors/errors.js';
import { anchorTrust, verifyLedger, VerifyUsageError, type VerifyReport } from '../ledger/verify/index.js';
import { verifyProof } from '../ledger/verify/proof.js';
import { loadPublicKey, KeyError } from '../ledger/keys.js';

const HELP = `usage: cloakpipe verify (--home DIR | --ledger FILE) [--public-key PEM] [--tsa-root PEM]
                       [--rekor-key PEM] [--require-anchors] [--checkpoint FILE]... [--json]
                       [--workers N]
       cloakpipe verify --proof FILE --public-key PEM [--tsa-root PEM] [--rekor-key PEM]
                       [--require-anchors] [--json]

Checks a ledger offline (it never opens a network connection): the hash chain, every signature,
contiguous sequence numbers from 0, non-decreasing time, every epoch's Merkle root, every RFC 3161
token (imprint, signature, chain to --tsa-root, timeStamping EKU, genTime) and every Rekor entry
(body, signed entry timestamp, inclusion proof, signed checkpoint; a Rekor v2 entry has no signed
entry timestamp: its signed checkpoint is the proof and its time is the epoch's RFC 3161 token's).
  --home DIR         a gate home (its ledger.db; the key is the home's gate.pub unless --public-key)
  --ledger FILE      an export (cloakpipe ledger export); give --public-key: without it the key
                     inside the file is trusted, which cannot detect a forger (a warning says so)
  --public-key PEM   the gate's public key, obtained independently of the ledger
  --tsa-root PEM     the TSA chain (signing certificate first, root last, or only the root)
  --rekor-key PEM    the Rekor log's public key
  --require-anchors  fail when any entry lies outside an epoch anchored by every kind whose trust
                     root is given (an unfinished tail after a crash fails here, not as tampering);
                     with neither --tsa-root nor --rekor-key, Rekor anchors are required and
                     checked with the built-in public Rekor key (rekor.sigstore.dev)
  --checkpoint FILE  a checkpoint kept from \`cloakpipe ledger checkpoint\` (repeatable): fail unless
                     the ledger still holds every entry it covers, unchanged (detects a deleted tail)
  --proof FILE       one entry alone (cloakpipe ledger prove): its signature, its inclusion proof
                     to its epoch's root, the signed epoch entry and the epoch's anchors
  --json             the report as one JSON object
  --workers N        signature-checking threads (default: every core; 0 = none)
Exit 0 valid, 1 a check failed, 2 usage error.
`;

function readText(path: string, what: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (e) {
    throw new UsageError(`cannot read ${what} ${path}: ${(e as NodeJS.ErrnoException).code ?? 'error'}`);
  }
}

function progressBar(): { update(done: number, total: number): void; clear(): void } | null {
  if (!process.stderr.isTTY) return null;
  let last = -1;
  return {
    update(done, total) {
      const pct = total > 0 ? Math.min(100, Math.floor((done * 100) / total)) : 100;
      if (pct === last) return;
      last = pct;
      const width = 30;
      const fill = Math.round((pct * width) / 100);
      process.stderr.write(`\rverifying [${'#'.repeat(fill)}${'.'.repeat(width - fill)}] ${pct}% ${done}/${total}`);
    },
    clear() {
      if (last >= 0) process.stderr.write('\r\x1b[K');
    },
  };
}

export function summaryLines(r: VerifyReport): string[] {
  const a = r.anchors;
  const lines = [
    `ledger verified: ${r.entries} entries, ${r.epochs} epochs, key ${r.keyId ?? '-'}${r.keySource === 'embedded' ? ' (from the export)' : ''}`,
    `  anchors         rfc3161 ${a.rfc3161.verified} verified${a.rfc3161.unchecked ? `, ${a.rfc3161.unchecked} unchecked` : ''}; rekor ${a.rekor.verified} verified${a.rekor.unchecked ? `, ${a.rekor.unchecked} unchecked` : ''}`,
    `  anchored        ${r.anchoredThrough === null ? 'none' : `through seq ${r.anchoredThrough}`}${r.requiredKinds.length ? ` (${r.requiredKinds.join(' + ')})` : ''}`,
  ];
  if (r.checkpoints > 0) lines.push(`  checkpoints     ${r.checkpoints} held (every entry they cover is present and unchanged)`);
  if (r.builtinRekorKey) lines.push('  rekor key       built in (rekor.sigstore.dev)');
  const unchecked = a.rfc3161.unchecked + a.rekor.unchecked;
  if (r.requiredKinds.length === 0 && unchecked > 0 && a.rfc3161.verified + a.rekor.verified === 0) {
    lines[2] = '  anchored        not checked (give --tsa-root and/or --rekor-key)';
  } else if (r.unanchored) {
    lines.push(`  unanchored      ${r.unanchored.count} entries from seq ${r.unanchored.from} (not yet sealed and anchored)`);
  }
  return lines;
}

export async function run(argv: string[]): Promise<number> {
  const { values } = parseFlags(argv, {
    home: { type: 'string' },
    ledger: { type: 'string' },
    'public-key': { type: 'string' },
    'tsa-root': { type: 'string' },
    'rekor-key': { type: 'string' },
    'require-anchors': { type: 'boolean' },
    checkpoint: { type: 'string', multiple: true },
    proof: { type: 'string' },
    json: { type: 'boolean' },
    workers: { type: 'string' },
  });
  if (values.help) return void process.stdout.write(HELP), 0;
  if (values.proof !== undefined) return runProof(values);
  if ((values.home === undefined) === (values.ledger === undefined)) throw new UsageError('give exactly one of --home DIR or --ledger FILE');
  let workers: number | undefined;
  if (values.workers !== undefined) {
    if (!/^[0-9]{1,3}$/.test(values.workers)) throw new UsageError('--workers must be a small non-negative integer');
    workers = Number(values.workers);
  }
  let publicKey = values['public-key'] !== undefined ? readText(values['public-key'], 'public key') : undefined;
  let source: { ledgerDb: string } | { exportFile: string };
  if (values.home !== undefined) {
    const home = resolveHome(values.home);
    publicKey ??= readText(home.pub, 'the home public key');
    source = { ledgerDb: home.ledger };
  } else {
    source = { exportFile: values.ledger! };
  }
  const json = values.json === true;
  const bar = json ? null : progressBar();
  let report: VerifyReport;
  try {
    report = await verifyLedger(source, {
      publicKey,
      tsaRoot: values['tsa-root'] !== undefined ? readText(values['tsa-root'], 'TSA root') : undefined,
      rekorKey: values['rekor-key'] !== undefined ? readText(values['rekor-key'], 'Rekor key') : undefined,
      requireAnchors: values['require-anchors'] === true,
      checkpoints: (values.checkpoint ?? []).map((p) => readText(p, 'checkpoint')),
      workers,
      onProgress: bar ? (d, t) => bar.update(d, t) : undefined,
    });
  } catch (e) {
    if (e instanceof VerifyUsageError || (e instanceof AnchorError && e.code === 'key_invalid')) throw new UsageError(e.message);
    if ((e as { name?: string }).name === 'StoreError') throw new UsageError((e as Error).message);
    throw e;
  } finally {
    bar?.clear();
  }
  for (const w of report.warnings) process.stderr.write(`cloakpipe verify: warning: ${w}\n`);
  if (json) {
    process.stdout.write(JSON.stringify(report) + '\n');
  } else if (report.failure) {
    const f = report.failure;
    const what = f.anchor ? ` (${f.code}: ${f.anchor} ${f.anchorCode})` : ` (${f.code})`;
    process.stdout.write(`ledger INVALID${f.seq === null ? '' : ` at seq ${f.seq}`}${what}: ${f.detail}\n`);
  } else {
    process.stdout.write(summaryLines(report).join('\n') + '\n');
  }
  return report.ok ? 0 : 1;
}

interface ProofFlags {
  proof?: string;
  home?: string;
  ledger?: string;
  checkpoint?: string[];
  'public-key'?: string;
  'tsa-root'?: string;
  'rekor-key'?: string;
  'require-anchors'?: boolean;
  json?: boolean;
}

async function runProof(values: ProofFlags): Promise<number> {
  if (values.home !== undefined || values.ledger !== undefined || values.checkpoint !== undefined) throw new UsageError('--proof is checked alone: no --home, --ledger or --checkpoint');
  if (values['public-key'] === undefined) throw new UsageError('--proof needs --public-key PEM (the gate key, obtained independently of the proof)');
  let publicKey;
  try {
    publicKey = loadPublicKey(values['public-key']);
  } catch (e) {
    if (e instanceof KeyError) throw new UsageError(e.message);
    throw e;
  }
  const text = readText(values.proof!, 'proof');
  const tsaRoot = values['tsa-root'] !== undefined ? readText(values['tsa-root'], 'TSA root') : undefined;
  const trust = anchorTrust({
    tsaRoot,
    rekorKey: values['rekor-key'] !== undefined ? readText(values['rekor-key'], 'Rekor key') : undefined,
    requireAnchors: values['require-anchors'] === true,
  });
  let r;
  try {
    r = await verifyProof(text, {
      publicKey,
      tsaRoot,
      rekorKey: trust.rekorKey,
      requiredKinds: values['require-anchors'] === true ? trust.requiredKinds : [],
    });
  } catch (e) {
    if (e instanceof AnchorError && e.code === 'key_invalid') throw new UsageError(e.message);
    throw e;
  }
  if (values.json) process.stdout.write(JSON.stringify(r) + '\n');
  else if (r.failure) {
    const f = r.failure;
    const what = f.anchor ? ` (${f.code}: ${f.anchor} ${f.anchorCode})` : ` (${f.code})`;
    process.stdout.write(`proof INVALID${f.seq === null ? '' : ` at seq ${f.seq}`}${what}: ${f.detail}\n`);
  } else {
    const a = r.anchors;
    process.stdout.write(
      [
        `proof verified: entry ${r.seq} (${r.kind}) is in epoch ${r.epoch!.seq} (entries ${r.epoch!.first}..${r.epoch!.last}), root ${r.epoch!.root}`,
        `  anchors         rfc3161 ${a.rfc3161.verified} verified${a.rfc3161.unchecked ? `, ${a.rfc3161.unchecked} unchecked` : ''}; rekor ${a.rekor.verified} verified${a.rekor.unchecked ? `, ${a.rekor.unchecked} unchecked` : ''}`,
      ].join('\n') + '\n',
    );
  }
  return r.ok ? 0 : 1;
}
