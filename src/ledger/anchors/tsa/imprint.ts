// What the token says: guards against a genuine token for another digest (imprint), a replayed
// answer to another request (nonce), and a timestamp earlier than what it must follow (genTime).
import { fail } from '../errors.js';
import type { DigestSpec } from '../encoding.js';
import type { TstInfo } from './token.js';

export function checkImprint(tst: TstInfo, digest: DigestSpec): void {
  const got = tst.imprint;
  if (got.algorithm !== digest.algorithm || !got.value.equals(digest.value)) {
    fail('imprint_mismatch', `token imprint is not ${digest.algorithm}:${digest.value.toString('hex')}`);
  }
}

export function checkNonce(tst: TstInfo, nonce: bigint): void {
  if (tst.nonce === undefined) fail('nonce_mismatch', 'token carries no nonce');
  if (tst.nonce !== nonce) fail('nonce_mismatch', 'token nonce differs from the request nonce');
}

export function checkGenTime(tst: TstInfo, notBefore: Date): void {
  if (tst.genTime.getTime() < notBefore.getTime()) {
    fail('gentime_before', `genTime ${tst.genTime.toISOString()} is before ${notBefore.toISOString()}`);
  }
}
