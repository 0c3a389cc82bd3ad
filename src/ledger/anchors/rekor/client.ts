// Rekor client: records an epoch root in a Rekor log as a hashedrekord entry signed by the gate key
// with Ed25519ph (see ed25519ph.ts: the recorded digest is SHA-512 of the artifact, the signature
// is Ed25519ph over the artifact), and returns the stored entry in the file format `anchor verify`
// and `verify` read. With the log key it verifies the answer before returning it, so an entry the
// ledger stores is one `verify` accepts.
// Either generation behind one `--rekor URL`: a v2 (tlog-tiles) log takes a hashedrekord 0.0.2
// request at /api/v2/log/entries and answers the entry with its inclusion proof and checkpoint; a
// v1 log takes hashedrekord 0.0.1 at /api/v1/log/entries. The client asks v2 first and falls back
// to v1 only when the log answers 404 or 405 (no such API), remembering the answer per URL.
import { createHash, type KeyObject } from 'node:crypto';
import type { Signer } from '../../../core/signer.js';
import { asSigner } from '../../../keys/file.js';
import { AnchorError, fail } from '../errors.js';
import { httpGet, httpPost } from '../http.js';
import type { RekorEntryFile } from './entry.js';
import { epochEnvelope } from './dsse.js';
import { verifyRekorEntry, type RekorSummary } from './verify.js';
import { leafHash } from '../../merkle.js';

export type ProposedHashedRekord = {
  apiVersion: '0.0.1';
  kind: 'hashedrekord';
  spec: { data: { hash: { algorithm: 'sha512'; value: string } }; signature: { content: string; publicKey: { content: string } } };
};

/** What signs for the gate: a Signer, or a private KeyObject or PKCS#8 PEM. */
export type GateSigner = Signer | KeyObject | string;

/** Ed25519ph over the artifact by the gate key; throws when the key cannot make one. */
function prehashSignature(signer: Signer, artifact: Uint8Array): Buffer {
  const sig = signer.signPrehashed(artifact);
  if (!sig) throw new TypeError(`the gate key (${signer.where}) cannot sign Ed25519ph`);
  return sig;
}

/** A hashedrekord v0.0.1 proposal for `artifact` (an epoch root), signed Ed25519ph by the gate key. */
export function hashedRekordFor(artifact: Uint8Array, gateKey: GateSigner): ProposedHashedRekord {
  const signer = asSigner(gateKey);
  const signature = prehashSignature(signer, artifact);
  const publicPem = signer.publicKey.export({ type: 'spki', format: 'pem' }) as string;
  return {
    apiVersion: '0.0.1',
    kind: 'hashedrekord',
    spec: {
      data: { hash: { algorithm: 'sha512', value: createHash('sha512').update(artifact).digest('hex') } },
      signature: { content: Buffer.from(signature).toString('base64'), publicKey: { content: Buffer.from(publicPem).toString('base64') } },
    },
  };
}

/** A hashedrekord 0.0.2 request (Rekor v2) for `artifact`, signed Ed25519ph by the gate key. */
export function hashedRekordV2RequestFor(artifact: Uint8Array, gateKey: GateSigner) {
  const signer = asSigner(gateKey);
  const signature = prehashSignature(signer, artifact);
  const spki = signer.publicKey.export({ type: 'spki', format: 'der' });
  return {
    hashedRekordRequestV002: {
      digest: createHash('sha512').update(artifact).digest('base64'),
      signature: {
        content: Buffer.from(signature).toString('base64'),
        verifier: { publicKey: { rawBytes: spki.toString('base64') }, keyDetails: 'PKIX_ED25519_PH' },
      },
    },
  };
}

/**
 * The request for an epoch root signed by a key that cannot sign Ed25519ph (dsse.ts): a DSSE
 * envelope with a pure Ed25519 signature; v1 takes dsse 0.0.1, v2 dsse 0.0.2.
 */
export function dsseRequestFor(artifact: Uint8Array, signer: Signer, api: 'v1' | 'v2') {
  const envelope = epochEnvelope(artifact, (m) => signer.sign(m));
  if (api === 'v2')
    return { dsseRequestV002: { envelope, verifiers: [{ publicKey: { rawBytes: signer.publicKey.export({ type: 'spki', format: 'der' }).toString('base64') }, keyDetails: 'PKIX_ED25519' }] } };
  const pem = signer.publicKey.export({ type: 'spki', format: 'pem' }) as string;
  return { apiVersion: '0.0.1', kind: 'dsse', spec: { proposedContent: { envelope: JSON.stringify(envelope), verifiers: [Buffer.from(pem).toString('base64')] } } };
}

/** hashedrekord (Ed25519ph) when the key can sign it, else a dsse envelope (dsse.ts). */
function requestFor(artifact: Uint8Array, gateKey: GateSigner, api: 'v1' | 'v2'): unknown {
  const signer = asSigner(gateKey);
  if (!signer.prehash) return dsseRequestFor(artifact, signer, api);
  return api === 'v2' ? hashedRekordV2RequestFor(artifact, signer) : hashedRekordFor(artifact, signer);
}

// protojson: int64 as a decimal string, bytes as base64.
function int64(v: unknown, what: string): number {
  if (typeof v !== 'string' || !/^(0|[1-9][0-9]{0,15})$/.test(v) || !Number.isSafeInteger(Number(v))) fail('malformed', `Rekor answer: ${what} is not an int64 string`);
  return Number(v);
}
function bytesHex(v: unknown, what: string): string {
  if (typeof v !== 'string') fail('malformed', `Rekor answer: ${what} is not base64`);
  return Buffer.from(v, 'base64').toString('hex');
}

/** Converts a v2 TransparencyLogEntry (protojson) to the file format. */
export function toEntryFileV2(answer: unknown): RekorEntryFile {
  const t = (answer ?? {}) as Record<string, any>;
  const p = t.inclusionProof;
  if (!p || typeof p !== 'object' || !Array.isArray(p.hashes) || typeof p.checkpoint?.envelope !== 'string' || typeof t.canonicalizedBody !== 'string') {
    fail('malformed', 'Rekor answer: no inclusion proof with a checkpoint');
  }
  return {
    canonicalizedBody: t.canonicalizedBody,
    integratedTime: null,
    logIndex: int64(t.logIndex, 'logIndex'),
    logID: bytesHex(t.logId?.keyId, 'logId.keyId'),
    inclusionProof: {
      logIndex: int64(p.logIndex, 'inclusionProof.logIndex'),
      treeSize: int64(p.treeSize, 'inclusionProof.treeSize'),
      rootHash: bytesHex(p.rootHash, 'inclusionProof.rootHash'),
      hashes: p.hashes.map((h: unknown, i: number) => bytesHex(h, `inclusionProof.hashes[${i}]`)),
      checkpoint: p.checkpoint.envelope,
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

// Which API each log URL answered (a process asks once per URL).
const apiOf = new Map<string, 'v1' | 'v2'>();

/**
 * Submits the epoch root to the log at `url` (v2 first, else v1; see the top of this file).
 * Network, timeout and HTTP errors throw AnchorError('unavailable'); with `rekorKey`, an answer
 * that does not verify throws its verification code.
 */
export async function submitToRekor(
  url: string,
  artifact: Uint8Array,
  gateKey: GateSigner,
  opts: { timeoutMs?: number; rekorKey?: string | KeyObject; api?: 'v1' | 'v2'; notBefore?: Date } = {},
): Promise<RekorSubmitResult> {
  const base = url.replace(/\/+$/, '');
  const timeoutMs = opts.timeoutMs ?? 15_000;
  const api = opts.api ?? apiOf.get(base);
  if (api !== 'v1') {
    const r = await submitV2(base, artifact, gateKey, timeoutMs);
    if (r !== 'no-v2') {
      apiOf.set(base, 'v2');
      return finish(r, artifact, gateKey, opts);
    }
    if (api === 'v2') fail('unavailable', 'Rekor has no v2 API at this URL');
  }
  const r = await submitV1(base, artifact, gateKey, timeoutMs);
  apiOf.set(base, 'v1');
  return finish(r, artifact, gateKey, opts);
}

async function submitV2(base: string, artifact: Uint8Array, gateKey: GateSigner, timeoutMs: number): Promise<{ entry: RekorEntryFile; uuid: string } | 'no-v2'> {
  const res = await httpPost(`${base}/api/v2/log/entries`, Buffer.from(JSON.stringify(requestFor(artifact, gateKey, 'v2'))), {
    contentType: 'application/json',
    accept: 'application/json',
    timeoutMs,
    maxBytes: 4 << 20,
  });
  if (res.status === 404 || res.status === 405) return 'no-v2';
  // A v2 log has no lookup by hash: an entry it already holds (409) cannot be fetched back.
  if (res.status === 409) fail('unavailable', 'Rekor v2 already holds this entry and cannot return its proof');
  if (res.status !== 200 && res.status !== 201) fail('unavailable', `Rekor answered HTTP ${res.status}`);
  const entry = toEntryFileV2(parseJson(res.body));
  return { entry, uuid: leafHash(Buffer.from(entry.canonicalizedBody, 'base64')).toString('hex') };
}

function finish(
  found: { entry: RekorEntryFile; uuid: string },
  artifact: Uint8Array,
  gateKey: GateSigner,
  { rekorKey, notBefore }: { rekorKey?: string | KeyObject; notBefore?: Date },
): RekorSubmitResult {
  let summary: RekorSummary | undefined;
  if (rekorKey) {
    // The artifact itself as the digest: a hashedrekord matches it through SHA-512 and its
    // Ed25519ph signature, a dsse entry through SHA-256 and its envelope signature (body.ts).
    const digest = { algorithm: 'sha256' as const, value: Buffer.from(artifact) };
    summary = verifyRekorEntry(found.entry, rekorKey, { signer: asSigner(gateKey).publicKey, digest, notBefore });
  } else if (!found.entry.canonicalizedBody || !(found.entry.integratedTime === null || ('signedEntryTimestamp' in found.entry && found.entry.signedEntryTimestamp))) {
    throw new AnchorError('malformed', 'Rekor answer: incomplete entry');
  }
  return { entry: found.entry, uuid: found.uuid, summary };
}

async function submitV1(base: string, artifact: Uint8Array, gateKey: GateSigner, timeoutMs: number): Promise<{ entry: RekorEntryFile; uuid: string }> {
  const proposal = requestFor(artifact, gateKey, 'v1');
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
  return { entry: found.entry, uuid: found.uuid };
}
