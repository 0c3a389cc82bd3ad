// Rekor client: records an epoch root in a Rekor log as a hashedrekord v0.0.1 entry signed by the
// gate key with Ed25519ph (see ed25519ph.ts: data.hash is sha512 of the artifact, the signature is
// Ed25519ph over the artifact), and returns the stored entry in the file format `anchor verify`
// and `verify` read. With the log key it verifies the answer before returning it, so an entry the
// ledger stores is one `verify` accepts.
import { createHash, createPrivateKey, createPublicKey, type KeyObject } from 'node:crypto';
import { AnchorError, fail } from '../errors.js';
import { httpGet, httpPost } from '../http.js';
import { ed25519Seed, signEd25519ph } from './ed25519ph.js';
import type { RekorEntryFile } from './entry.js';
import { verifyRekorEntry, type RekorSummary } from './verify.js';

export type ProposedHashedRekord = {
  apiVersion: '0.0.1';
  kind: 'hashedrekord';
  spec: { data: { hash: { algorithm: 'sha512'; value: string } }; signature: { content: string; publicKey: { content: string } } };
};

/** The gate's private key as a KeyObject (accepts a PKCS#8 PEM). */
export function gatePrivateKey(key: KeyObject | string): KeyObject {
  const k = typeof key === 'string' ? createPrivateKey(key) : key;
  if (k.type !== 'private' || k.asymmetricKeyType !== 'ed25519') throw new TypeError('gate key must be an Ed25519 private key');
  return k;
}

/** A hashedrekord v0.0.1 proposal for `artifact` (an epoch root), signed Ed25519ph by the gate key. */
export function hashedRekordFor(artifact: Uint8Array, gateKey: KeyObject | string): ProposedHashedRekord {
  const key = gatePrivateKey(gateKey);
  const signature = signEd25519ph(ed25519Seed(key), artifact);
  const publicPem = createPublicKey(key).export({ type: 'spki', format: 'pem' }) as string;
  return {
    apiVersion: '0.0.1',
    kind: 'hashedrekord',
    spec: {
      data: { hash: { algorithm: 'sha512', value: createHash('sha512').update(artifact).digest('hex') } },
      signature: { content: Buffer.from(signature).toString('base64'), publicKey: { content: Buffer.from(publicPem).toString('base64') } },
    },
  };
}

type ApiEntry = {
  body: string;
  integratedTime: number;
  logID: string;
  logIndex: number;
  verification?: { signedEntryTimestamp?: string; inclusionProof?: RekorEntryFile['inclusionProof'] };
};

/** Converts the API's {uuid: entry} answer to the file format. */
export function toEntryFile(answer: unknown): { uuid: string; entry: RekorEntryFile | null } {
  if (!answer || typeof answer !== 'object') fail('malformed', 'Rekor answer: not an object');
  const keys = Object.keys(answer);
  if (keys.length !== 1) fail('malformed', 'Rekor answer: expected one entry');
  const e = (answer as Record<string, ApiEntry>)[keys[0]];
  const v = e?.verification;
  if (!v?.inclusionProof || !v.signedEntryTimestamp) return { uuid: keys[0], entry: null };
  return {
    uuid: keys[0],
    entry: {
      canonicalizedBody: e.body,
      integratedTime: e.integratedTime,
      logIndex: e.logIndex,
      logID: e.logID,
      signedEntryTimestamp: v.signedEntryTimestamp,
      inclusionProof: {
        logIndex: v.inclusionProof.logIndex,
        treeSize: v.inclusionProof.treeSize,
        rootHash: v.inclusionProof.rootHash,
        hashes: v.inclusionProof.hashes,
        checkpoint: v.inclusionProof.checkpoint,
      },
    },
  };
}

function parseJson(b: Buffer): unknown {
  try {
    return JSON.parse(b.toString('utf8'));
  } catch {
    fail('malformed', 'Rekor answer: not JSON');
  }
}

export type RekorSubmitResult = { entry: RekorEntryFile; uuid: string; summary?: RekorSummary };

/**
 * Submits the epoch root to `{url}/api/v1/log/entries`. An entry already in the log (409) is
 * fetched. Network, timeout and HTTP errors throw AnchorError('unavailable'); with `rekorKey`,
 * an answer that does not verify throws its verification code.
 */
export async function submitToRekor(
  url: string,
  artifact: Uint8Array,
  gateKey: KeyObject | string,
  opts: { timeoutMs?: number; rekorKey?: string | KeyObject } = {},
): Promise<RekorSubmitResult> {
  const base = url.replace(/\/+$/, '');
  const timeoutMs = opts.timeoutMs ?? 15_000;
  const proposal = hashedRekordFor(artifact, gateKey);
  const res = await httpPost(`${base}/api/v1/log/entries`, Buffer.from(JSON.stringify(proposal)), {
    contentType: 'application/json',
    accept: 'application/json',
    timeoutMs,
    maxBytes: 4 << 20,
  });
  let found: { uuid: string; entry: RekorEntryFile | null };
  if (res.status === 201) {
    found = toEntryFile(parseJson(res.body));
  } else if (res.status === 409 && typeof res.headers.location === 'string') {
    found = { uuid: res.headers.location.split('/').pop() ?? '', entry: null };
  } else {
    fail('unavailable', `Rekor answered HTTP ${res.status}`);
  }
  // Without an inclusion proof in the answer, fetch the entry (the log may integrate it later).
  for (let attempt = 0; !found.entry && attempt < 5; attempt++) {
    if (attempt > 0) await new Promise((r) => setTimeout(r, 200 * attempt));
    const g = await httpGet(`${base}/api/v1/log/entries/${found.uuid}`, { accept: 'application/json', timeoutMs, maxBytes: 4 << 20 });
    if (g.status === 200) found = toEntryFile(parseJson(g.body));
    else if (g.status !== 404) fail('unavailable', `Rekor answered HTTP ${g.status}`);
  }
  if (!found.entry) fail('unavailable', 'Rekor did not return an inclusion proof');
  let summary: RekorSummary | undefined;
  if (opts.rekorKey) {
    const signer = createPublicKey(gatePrivateKey(gateKey));
    summary = verifyRekorEntry(found.entry, opts.rekorKey, {
      signer,
      digest: { algorithm: 'sha512', value: createHash('sha512').update(artifact).digest() },
    });
  } else if (!(found.entry.canonicalizedBody && 'signedEntryTimestamp' in found.entry && found.entry.signedEntryTimestamp)) {
    throw new AnchorError('malformed', 'Rekor answer: incomplete entry');
  }
  return { entry: found.entry, uuid: found.uuid, summary };
}
