// cloakpipe ledger anchor: seal the entries since the last epoch now and anchor the newest epoch
// (TSA and/or Rekor), e.g. after a gate was killed before its shutdown epoch. Exit 0 when every
// requested anchor was obtained (or nothing needed one), 1 when one failed (recorded in the ledger).
import { readFileSync } from 'node:fs';
import { parseFlags, timerDuration, UsageError } from './args.js';
import { openHomeWith } from '../home/open.js';
import { opening, STORE_OPTION } from './store-flags.js';
import { Anchoring, loadAnchorClients, type AnchorTargets } from '../ledger/anchoring.js';
import { AnchorError } from '../ledger/anchors/errors.js';
import { holdsPrivateKey, privateKeyRefusal } from '../keys/public.js';

const HELP = `usage: cloakpipe ledger anchor [--home DIR] [--store URL] [--tsa URL --tsa-root PEM] [--rekor URL --rekor-key PEM]
                              [--key pkcs11:URI] [--pin-file FILE] [--timeout 15s] [--json]

Seals an epoch of the entries since the last one (a signed epoch entry with their RFC 6962 root)
and anchors the newest epoch: an RFC 3161 token from --tsa, a hashedrekord entry in --rekor.
With --store URL (or CLOAKPIPE_STORE), the chain of this home's gate in the shared store.
With the gate key in a PKCS#11 token, it signs through the module (--key pkcs11:…, default the
URI init recorded; PIN from --pin-file or $CLOAKPIPE_PKCS11_PIN).
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

/** Anchor targets from the shared flags (also used by mcp-proxy). */
export function anchorTargets(v: { tsa?: string; 'tsa-root'?: string; rekor?: string; 'rekor-key'?: string }, timeoutMs?: number): AnchorTargets {
  if ((v.tsa === undefined) !== (v['tsa-root'] === undefined)) throw new UsageError('--tsa and --tsa-root go together');
  if ((v.rekor === undefined) !== (v['rekor-key'] === undefined)) throw new UsageError('--rekor and --rekor-key go together');
  return {
    tsa: v.tsa ? { url: v.tsa, chainPem: readText(v['tsa-root']!, 'TSA root') } : undefined,
    rekor: v.rekor ? { url: v.rekor, keyPem: readText(v['rekor-key']!, 'Rekor key') } : undefined,
    timeoutMs,
  };
}

export async function run(argv: string[]): Promise<number> {
  const { values } = parseFlags(argv, {
    home: { type: 'string' },
    tsa: { type: 'string' },
    'tsa-root': { type: 'string' },
    rekor: { type: 'string' },
    'rekor-key': { type: 'string' },
    timeout: { type: 'string' },
    json: { type: 'boolean' },
    ...STORE_OPTION,
    key: { type: 'string' },
    'pin-file': { type: 'string' },
  });
  if (values.help) return void process.stdout.write(HELP), 0;
  const timeoutMs = values.timeout ? timerDuration(values.timeout, '--timeout') : undefined;
  const targets = anchorTargets(values, timeoutMs);
  try {
    await loadAnchorClients(targets);
  } catch (e) {
    if (e instanceof AnchorError) throw new UsageError(e.message);
    throw e;
  }
  const h = await opening(() => openHomeWith({ home: values.home, store: values.store, key: { uri: values.key, pinFile: values['pin-file'] } }));
  try {
    const anchoring = new Anchoring({
      anchors: h.store.anchors,
      ledger: h.ledger,
      key: h.key,
      transact: h.store.transact,
      targets,
      log: (l) => process.stderr.write(`cloakpipe ledger anchor: ${l}\n`),
    });
    const r = await anchoring.tick();
    const failed = r.outcomes.filter((o) => !o.ok);
    if (values.json) {
      process.stdout.write(JSON.stringify({ epoch: r.epoch ? { seq: r.epoch.seq, first: r.epoch.first, last: r.epoch.last, root: r.epoch.root } : null, sealed: r.sealed, anchors: r.outcomes }) + '\n');
    } else if (!r.epoch) {
      process.stdout.write('nothing to seal: the ledger is empty\n');
    } else {
      process.stdout.write(`${r.sealed ? 'sealed' : 'retried'} epoch ${r.epoch.seq}: entries ${r.epoch.first}..${r.epoch.last}, root ${r.epoch.root}\n`);
      for (const o of r.outcomes) process.stdout.write(`  ${o.kind.padEnd(8)} ${o.ok ? 'anchored' : `FAILED (${o.reason})`}\n`);
    }
    return failed.length ? 1 : 0;
  } finally {
    h.close();
  }
}
