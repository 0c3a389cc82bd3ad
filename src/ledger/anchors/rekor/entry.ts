// Parses a Rekor entry in the file format of shared/fixtures/public-log/ (also the v1 API's nested
// `verification` form). Strict: read with the strict JSON parser (no duplicate keys), and every
// byte string has one spelling, so an edited character is a different value, never the same one
// re-spelled.
// Two generations share the format. v1: a signed entry timestamp and an integratedTime. v2
// (tlog-tiles): `integratedTime` is null and there is no `signedEntryTimestamp`; the signed
// checkpoint is the whole proof and time comes from an RFC 3161 token.
import { fail } from '../errors.js';
import { safeInteger, strictBase64, strictHex } from '../encoding.js';
import { readEvidenceJson } from '../evidence-json.js';

type InclusionProofFile = { logIndex: number; treeSize: number; rootHash: string; hashes: string[]; checkpoint: string };

/** The file format (what `anchor verify --rekor-entry` reads and the Rekor client stores). */
export type RekorEntryFile =
  | {
      canonicalizedBody: string;
      integratedTime: number;
      logIndex: number;
      logID: string;
      signedEntryTimestamp: string;
      inclusionProof: InclusionProofFile;
      source?: string;
    }
  | {
      canonicalizedBody: string;
      integratedTime: null;
      logIndex: number;
      logID: string;
      inclusionProof: InclusionProofFile;
      source?: string;
    };

export type RekorEntry = {
  version: 1 | 2;
  body: Buffer;
  bodyBase64: string;
  integratedTime: number | null; // null for v2
  logIndex: number;
  logID: Buffer;
  signedEntryTimestamp: Buffer | null; // null for v2
  proof: { logIndex: number; treeSize: number; rootHash: Buffer; hashes: Buffer[]; checkpoint: string };
};

function obj(v: unknown, what: string): Record<string, unknown> {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) fail('malformed', `${what}: not an object`);
  return v as Record<string, unknown>;
}

export function parseRekorEntry(input: string | Uint8Array | object): RekorEntry {
  const raw: unknown = typeof input === 'string' || input instanceof Uint8Array ? readEvidenceJson(input, 'rekor entry') : input;
  let e = obj(raw, 'rekor entry');
  // The v1 API answers {"<uuid>": {body, ..., verification: {...}}}.
  const keys = Object.keys(e);
  if (keys.length === 1 && /^[0-9a-f]{64,80}$/.test(keys[0])) e = obj(e[keys[0]], 'rekor entry');
  const verification = e.verification === undefined ? {} : obj(e.verification, 'verification');
  const bodyB64 = e.canonicalizedBody ?? e.body;
  const set = e.signedEntryTimestamp ?? verification.signedEntryTimestamp;
  const p = obj(e.inclusionProof ?? verification.inclusionProof, 'inclusionProof');
  if (!Array.isArray(p.hashes)) fail('malformed', 'inclusionProof.hashes: not an array');
  if (typeof p.checkpoint !== 'string' && (typeof p.checkpoint !== 'object' || p.checkpoint === null)) {
    fail('malformed', 'inclusionProof.checkpoint: missing');
  }
  // Bundles spell the checkpoint {envelope: "..."}.
  const checkpoint = typeof p.checkpoint === 'string' ? p.checkpoint : (p.checkpoint as { envelope?: unknown }).envelope;
  if (typeof checkpoint !== 'string') fail('malformed', 'inclusionProof.checkpoint: not a string');
  const body = strictBase64(bodyB64, 'canonicalizedBody');
  if (body.length === 0) fail('malformed', 'canonicalizedBody: empty');
  // v2 is stated, not guessed: integratedTime null AND no signed entry timestamp. A v1 entry
  // stripped of its SET is neither and is refused.
  const v2 = e.integratedTime === null && set === undefined;
  let setBytes: Buffer | null = null;
  if (!v2) {
    setBytes = strictBase64(set, 'signedEntryTimestamp');
    if (setBytes.length === 0) fail('malformed', 'signedEntryTimestamp: empty');
  }
  return {
    version: v2 ? 2 : 1,
    body,
    bodyBase64: bodyB64 as string,
    integratedTime: v2 ? null : safeInteger(e.integratedTime, 'integratedTime'),
    logIndex: safeInteger(e.logIndex, 'logIndex'),
    logID: strictHex(e.logID, 'logID', 32),
    signedEntryTimestamp: setBytes,
    proof: {
      logIndex: safeInteger(p.logIndex, 'inclusionProof.logIndex'),
      treeSize: safeInteger(p.treeSize, 'inclusionProof.treeSize'),
      rootHash: strictHex(p.rootHash, 'inclusionProof.rootHash', 32),
      hashes: p.hashes.map((h, i) => strictHex(h, `inclusionProof.hashes[${i}]`, 32)),
      checkpoint,
    },
  };
}
