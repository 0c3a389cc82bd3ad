// Signed entry timestamp: the log's promise that it integrated this body at this time and index.
// Guards against an entry whose body, time, index or log id was edited after the log signed it.
// The signed bytes are the RFC 8785 form of {body, integratedTime, logID, logIndex}.
import type { KeyObject } from 'node:crypto';
import { canonicalize } from '../../../core/canonical.js';
import { fail } from '../errors.js';
import type { RekorEntry } from './entry.js';
import { verifyLogSignature } from './log-key.js';

export function setPayload(e: { bodyBase64: string; integratedTime: number; logID: Uint8Array; logIndex: number }): Buffer {
  return Buffer.from(
    canonicalize({ body: e.bodyBase64, integratedTime: e.integratedTime, logID: Buffer.from(e.logID).toString('hex'), logIndex: e.logIndex }),
    'utf8',
  );
}

export function verifySet(e: RekorEntry, key: KeyObject): void {
  if (e.signedEntryTimestamp === null || e.integratedTime === null) fail('set_invalid', 'entry has no signed entry timestamp');
  if (!verifyLogSignature(key, setPayload({ ...e, integratedTime: e.integratedTime }), e.signedEntryTimestamp)) {
    fail('set_invalid', 'signed entry timestamp does not verify with the log key');
  }
}
