// RFC 3161 client: asks a TSA to timestamp a digest (HTTP POST application/timestamp-query) and
// refuses an answer that is not for this request: status not granted, another imprint, another
// nonce (replay). With the TSA chain it also runs the full offline verification, so what the
// ledger stores is a token `verify` will accept.
import { randomBytes } from 'node:crypto';
import { encodeInteger, encodeOid, encodeTlv, parseDer, T } from '../der.js';
import { AnchorError, fail } from '../errors.js';
import type { DigestSpec } from '../encoding.js';
import { httpPost } from '../http.js';
import { OID_BY_HASH } from './oids.js';
import { parseTimeStamp } from './token.js';
import { checkImprint, checkNonce } from './imprint.js';
import { verifyTsaToken, type TsaSummary } from './verify.js';

/** A random positive 64-bit nonce. */
export function randomNonce(): bigint {
  return BigInt('0x' + randomBytes(8).toString('hex')) | 1n;
}

/** TimeStampReq { version 1, messageImprint, nonce, certReq TRUE } in DER. */
export function buildTimeStampReq(digest: DigestSpec, nonce: bigint, certReq = true): Buffer {
  const imprint = encodeTlv(T.SEQUENCE, encodeTlv(T.SEQUENCE, encodeOid(OID_BY_HASH[digest.algorithm])), encodeTlv(T.OCTET_STRING, digest.value));
  return encodeTlv(T.SEQUENCE, encodeInteger(1n), imprint, encodeInteger(nonce), ...(certReq ? [Buffer.from([T.BOOLEAN, 1, 0xff])] : []));
}

export type TimestampResult = { token: Buffer; nonce: bigint; summary?: TsaSummary };

/**
 * Requests a timestamp for `digest` (its bytes are the imprint; for an epoch, sha256:ROOT).
 * Returns the bare TimeStampToken (DER ContentInfo). Network, timeout and HTTP failures throw
 * AnchorError('unavailable'); a wrong answer throws the precise verification code.
 */
export async function requestTimestamp(
  url: string,
  digest: DigestSpec,
  opts: { timeoutMs?: number; chainPem?: string; nonce?: bigint; notBefore?: Date } = {},
): Promise<TimestampResult> {
  const nonce = opts.nonce ?? randomNonce();
  const res = await httpPost(url, buildTimeStampReq(digest, nonce), {
    contentType: 'application/timestamp-query',
    accept: 'application/timestamp-reply',
    timeoutMs: opts.timeoutMs ?? 10_000,
    maxBytes: 1 << 20,
  });
  if (res.status !== 200) fail('unavailable', `TSA answered HTTP ${res.status}`);
  let parsed;
  try {
    parsed = parseTimeStamp(res.body);
  } catch (e) {
    if (e instanceof AnchorError) throw e;
    fail('malformed', 'TSA answer: unreadable');
  }
  if (parsed.status === undefined) fail('malformed', 'TSA answer is not a TimeStampResp');
  checkImprint(parsed.tst, digest);
  checkNonce(parsed.tst, nonce);
  const token = tokenOf(res.body);
  const summary = opts.chainPem ? await verifyTsaToken(token, opts.chainPem, { digest, nonce, notBefore: opts.notBefore }) : undefined;
  return { token, nonce, summary };
}

// The TimeStampToken inside a TimeStampResp (second element of the outer SEQUENCE).
function tokenOf(resp: Buffer): Buffer {
  return Buffer.from(parseDer(resp).children[1].bytes);
}
