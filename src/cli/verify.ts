// cloakpipe verify: the ledger's offline audit (product.md section 7). Thin: flags, the library's
// verifyLedger, a progress bar on a terminal, one summary or one failure line. Exit 0 all holds,
// 1 a check failed (the first bad entry and why), 2 usage or configuration error.
import { readFileSync } from 'node:fs';
import { parseFlags, UsageError } from './args.js';
import type { ChainView } from '../home/open.js';
import { storeTarget } from '../store/target.js';
import { GATE_OPTION, opening, shownGate, STORE_OPTION } from './store-flags.js';
import { AnchorError } from '../ledger/anchors/errors.js';
import { formatDuration } from '../util/duration.js';
import { anchorTrust, verifyLedger, VerifyUsageError, type VerifyReport, type VerifySource } from '../ledger/verify/index.js';
import { resolveHome } from '../store/home.js';
import { holdsPrivateKey, privateKeyRefusal } from '../keys/public.js';

const HELP = `usage: cloakpipe verify (--home DIR | --ledger FILE) [--public-key PEM] [--tsa-root PEM]
                       [--rekor-key PEM] [--require-anchors] [--checkpoint FILE]... [--json]
                       [--workers N] [--allow-empty]
       cloakpipe verify --store URL [--gate NAME [--public-key PEM] [--checkpoint FILE]...]
                       [--tsa-root PEM] [--rekor-key PEM] [--require-anchors] [--json]
       cloakpipe verify --proof FILE --public-key PEM [--tsa-root PEM] [--rekor-key PEM]
                       [--require-anchors] [--json]

Checks a ledger offline (it never opens a network connection): the hash chain, every signature,
contiguous sequence numbers from 0, non-decreasing time, every epoch's Merkle root, every RFC 3161
token (imprint, signature, chain to --tsa-root, timeStamping EKU, genTime) and every Rekor entry
(body, signed entry timestamp, inclusion proof, signed checkpoint; a Rekor v2 entry has no signed
entry timestamp: its signed checkpoint is the proof and its time is the epoch's RFC 3161 token's).
An anchor proves its epoch existed by the anchor's time, not that the entries are as old as their
ts says: "anchor lag" is the longest time between an epoch's last entry and its earliest anchor.
Epochs sealed every --anchor-interval show about that interval; a lag of weeks means the entries
were anchored, perhaps written, long after the time they claim.
  --home DIR         a gate home (its ledger.db; the key is the home's gate.pub unless --public-key,
                     which whoever can rewrite the ledger can replace too: a warning says so);
                     with --store (or CLOAKPIPE_STORE) its gate's chain in the shared store
  --store URL        a fleet's shared PostgreSQL store: every registered gate's chain, each
                     against the key registered for it (a warning says that key came from the
                     store), or only --gate NAME (with --public-key: a key held apart)
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
  --allow-empty      accept a ledger that holds no entry (a home no gate has run in yet); without
                     it an empty ledger fails: it is evidence of nothing, and a ledger whose every
                     entry was deleted reads the same
  --json             the report as one JSON object
  --workers N        signature-checking threads (default: every core; 0 = none)
Exit 0 valid, 1 a check failed, 2 usage error.
`;

function readText(path: string, what: string): string {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new UsageError(`cannot read ${what} ${path}: ${(e as NodeJS.ErrnoException).code ?? 'error'}`);
  }
  if (holdsPrivateKey(text)) throw new UsageError(privateKeyRefusal(`${what} ${path}`)); // every file read here is public
  return text;
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
  if (r.anchorLag) {
    const l = r.anchorLag;
    lines.push(`  anchor lag      at most ${formatDuration(l.ms)} (epoch seq ${l.epoch}: last entry ${l.lastTs}, anchored ${l.anchoredAt})`);
  }
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
    'allow-empty': { type: 'boolean' },
    ...STORE_OPTION,
    ...GATE_OPTION,
  });
  if (values.help) return void process.stdout.write(HELP), 0;
  if (values.proof !== undefined) return runProof(values);
  const fleet = values.home === undefined && values.ledger === undefined && values.store !== undefined;
  if (!fleet && (values.home === undefined) === (values.ledger === undefined)) throw new UsageError('give exactly one of --home DIR, --ledger FILE or --store URL');
  if (values.gate !== undefined && !fleet) throw new UsageError('--gate names a chain in a shared store: give --store URL (without --home or --ledger)');
  let workers: number | undefined;
  if (values.workers !== undefined) {
    if (!/^[0-9]{1,3}$/.test(values.workers)) throw new UsageError('--workers must be a small non-negative integer');
    workers = Number(values.workers);
  }
  const givenKey = values['public-key'] !== undefined ? readText(values['public-key'], 'public key') : undefined;
  const trust = {
    tsaRoot: values['tsa-root'] !== undefined ? readText(values['tsa-root'], 'TSA root') : undefined,
    rekorKey: values['rekor-key'] !== undefined ? readText(values['rekor-key'], 'Rekor key') : undefined,
    requireAnchors: values['require-anchors'] === true,
    checkpoints: (values.checkpoint ?? []).map((p) => readText(p, 'checkpoint')),
    workers,
    allowEmpty: values['allow-empty'] === true,
  };
  const json = values.json === true;
  if (values.ledger !== undefined) return report1({ exportFile: values.ledger }, givenKey, trust, json);
  const home = fleet ? null : resolveHome(values.home);
  // A home's chain is checked against the home's own key (held apart from any shared store).
  const homeKey = () => givenKey ?? readText(home!.pub, 'the home public key');
  // The home's own gate.pub is no trust root: whoever can rewrite the ledger can replace it too.
  const homeKeyWarning = givenKey === undefined ? `checked against the home's own gate.pub (${home?.pub}): whoever can write the home can replace both it and the ledger; give --public-key PEM with a copy held apart` : undefined;
  if (home && storeTarget(values.store).kind === 'sqlite') return report1({ ledgerDb: home.ledger }, homeKey(), trust, json, homeKeyWarning);
  // A shared store: this home's gate's chain (--home), one gate's (--gate) or every gate's.
  if (fleet && values.gate === undefined && (givenKey !== undefined || trust.checkpoints.length > 0))
    throw new UsageError('--public-key and --checkpoint belong to one chain: name it with --gate NAME');
  const { openChains } = await import('../home/open.js');
  const views = await opening(() => openChains({ home: values.home, store: values.store, gate: values.gate, all: fleet && values.gate === undefined }));
  if (views.length === 0) throw new UsageError('no gate is registered in the store: nothing to verify');
  let ok = true;
  const reports: (VerifyReport & { gate: string })[] = [];
  try {
    for (const v of views) {
      const registered = !home && givenKey === undefined;
      const r = await verifyOne({ snapshot: v.snapshot }, home ? homeKey() : (givenKey ?? v.publicKeyPem ?? undefined), { ...trust, keyFromStore: registered }, json);
      if (registered) r.warnings.push(registeredKeyWarning(v));
      if (home && homeKeyWarning) r.warnings.push(homeKeyWarning);
      reports.push({ gate: v.gateId!, ...r });
      ok &&= r.ok;
    }
  } finally {
    for (const v of views) v.snapshot.close();
  }
  if (json) {
    process.stdout.write(JSON.stringify(views.length === 1 && !(fleet && values.gate === undefined) ? reports[0] : { ok, gates: reports }) + '\n');
    return ok ? 0 : 1;
  }
  for (const r of reports) {
    for (const w of r.warnings) process.stderr.write(`cloakpipe verify: gate ${shownGate(r.gate)}: warning: ${w}\n`);
    process.stdout.write(`gate ${shownGate(r.gate)}: ${reportLines(r).join('\n')}\n`);
  }
  return ok ? 0 : 1;
}

function registeredKeyWarning(v: ChainView): string {
  const g = shownGate(v.gateId!);
  return `checked against the key registered for gate ${g} in the store itself: whoever can write the store can replace both; give --gate ${g} --public-key PEM with a key held apart`;
}

interface Trust {
  tsaRoot?: string;
  rekorKey?: string;
  requireAnchors: boolean;
  checkpoints: string[];
  workers?: number;
  allowEmpty: boolean;
  keyFromStore?: boolean;
}

async function verifyOne(source: VerifySource, publicKey: string | undefined, trust: Trust, json: boolean): Promise<VerifyReport> {
  const bar = json ? null : progressBar();
  try {
    return await verifyLedger(source, { publicKey, ...trust, onProgress: bar ? (d, t) => bar.update(d, t) : undefined });
  } catch (e) {
    if (e instanceof VerifyUsageError || (e instanceof AnchorError && e.code === 'key_invalid')) throw new UsageError(e.message);
    if ((e as { name?: string }).name === 'StoreError') throw new UsageError((e as Error).message);
    throw e;
  } finally {
    bar?.clear();
  }
}

/** The summary of a report, or its one failure line. */
function reportLines(report: VerifyReport): string[] {
  if (!report.failure) return summaryLines(report);
  const f = report.failure;
  const what = f.anchor ? ` (${f.code}: ${f.anchor} ${f.anchorCode})` : ` (${f.code})`;
  return [`ledger INVALID${f.seq === null ? '' : ` at seq ${f.seq}`}${what}: ${f.detail}`];
}

async function report1(source: VerifySource, publicKey: string | undefined, trust: Trust, json: boolean, warning?: string): Promise<number> {
  const report = await verifyOne(source, publicKey, trust, json);
  if (warning) report.warnings.push(warning);
  for (const w of report.warnings) process.stderr.write(`cloakpipe verify: warning: ${w}\n`);
  process.stdout.write(json ? JSON.stringify(report) + '\n' : reportLines(report).join('\n') + '\n');
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
  // Loaded only here: what a proof needs (anchor checks, the key files) costs a ledger verify its start time.
  const [{ loadPublicKey, KeyError }, { verifyProof }] = await Promise.all([import('../ledger/keys.js'), import('../ledger/verify/proof.js')]);
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
