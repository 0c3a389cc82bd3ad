// What the token says: guards against a genuine token for another digest (imprint), a replayed
// answer to another request (nonce), and a timestamp earlier than what it must follow (genTime).
import type * as pkijs from 'pkijs';
import { fail } from '../errors.js';
import type { DigestSpec } from '../encoding.js';
import { HASH_BY_OID, HASH_LEN } from './oids.js';

export function tokenImprint(tst: pkijs.TSTInfo): DigestSpec {
  const h = HASH_BY_OID[tst.messageImprint.hashAlgorithm.algorithmId];
  const value = Buffer.from(tst.messageImprint.hashedMessage.valueBlock.valueHexView);
  if (!h || h === 'sha1') fail('imprint_mismatch', 'messageImprint uses an unsupported hash');
  if (value.length !== HASH_LEN[h]) fail('malformed', 'messageImprint has the wrong length for its hash');
  return { algorithm: h, value };
}

export function checkImprint(tst: pkijs.TSTInfo, digest: DigestSpec): void {
  const got = tokenImprint(tst);
  if (got.algorithm !== digest.algorithm || !got.value.equals(digest.value)) {
    fail('imprint_mismatch', `token imprint is not ${digest.algorithm}:${digest.value.toString('hex')}`);
  }
}

export function tokenNonce(tst: pkijs.TSTInfo): bigint | undefined {
  if (!tst.nonce) return undefined;
  const hex = Buffer.from(tst.nonce.valueBlock.valueHexView).toString('hex');
  return hex ? BigInt('0x' + hex) : 0n;
}

export function checkNonce(tst: pkijs.TSTInfo, nonce: bigint): void {
  const got = tokenNonce(tst);
  if (got === undefined) fail('nonce_mismatch', 'token carries no nonce');
  if (got !== nonce) fail('nonce_mismatch', 'token nonce differs from the request nonce');
}

export function checkGenTime(tst: pkijs.TSTInfo, notBefore: Date): void {
  if (tst.genTime.getTime() < notBefore.getTime()) {
    fail('gentime_before', `genTime ${tst.genTime.toISOString()} is before ${notBefore.toISOString()}`);
  }
}
