// One RFC 3161 token, offline: parsed strictly, signed by the certificate the ESS attribute
// names, that certificate chaining to the given root at genTime with a critical timeStamping
// EKU, and the token committing to the expected digest, nonce and earliest time.
// Used by `anchor verify` and by the ledger's `verify`.
import { AnchorError, fail } from '../errors.js';
import { parseDigest, type DigestSpec } from '../encoding.js';
import { cert, subjectOf } from './certs.js';
import { parseTimeStamp } from './token.js';
import { parseTrustBundle, signerCandidates, verifyChain } from './chain.js';
import { pickSignerByEss } from './ess.js';
import { verifyTokenSignature } from './signature.js';
import { verifyTimeStampingEku } from './eku.js';
import { checkGenTime, checkImprint, checkNonce } from './imprint.js';

export type TsaSummary = {
  tsa: string;
  chain: string[];
  genTime: string;
  hashAlgorithm: 'sha256' | 'sha384' | 'sha512';
  imprint: string;
  serialNumber: string;
  policy: string;
  nonce?: string;
  certificatesEmbedded: number;
  status?: number;
  digest?: string;
};

export type TsaVerifyOptions = { digest?: string | DigestSpec; nonce?: bigint; notBefore?: Date | string | number };

export async function verifyTsaToken(der: Uint8Array, chainPem: string, opts: TsaVerifyOptions = {}): Promise<TsaSummary> {
  try {
    return await verifyUnguarded(der, chainPem, opts);
  } catch (e) {
    // Any parser exception on hostile bytes is a malformed token, never a crash.
    if (e instanceof AnchorError) throw e;
    throw new AnchorError('malformed', 'token: unreadable structure');
  }
}

async function verifyUnguarded(der: Uint8Array, chainPem: string, opts: TsaVerifyOptions): Promise<TsaSummary> {
  let digest: DigestSpec | undefined;
  if (opts.digest !== undefined) {
    digest = typeof opts.digest === 'string' ? (parseDigest(opts.digest) ?? fail('malformed', 'digest: expected sha256:HEX')) : opts.digest;
  }
  const bundle = parseTrustBundle(chainPem);
  const t = parseTimeStamp(der);
  const candidates = signerCandidates(t, bundle);
  if (candidates.length === 0) fail('tsa_chain_invalid', 'the signing certificate is neither in the token nor in the given chain');
  const signer = pickSignerByEss(t, candidates);
  verifyTokenSignature(t, signer);
  const path = await verifyChain(t, signer, bundle, t.tst.genTime);
  verifyTimeStampingEku(signer);
  if (digest) checkImprint(t.tst, digest);
  if (opts.nonce !== undefined) checkNonce(t.tst, opts.nonce);
  if (opts.notBefore !== undefined) checkGenTime(t.tst, new Date(opts.notBefore));
  const imprint = t.tst.imprint;
  if (imprint.algorithm === 'sha1') fail('imprint_mismatch', 'token imprint uses SHA-1');
  return {
    tsa: subjectOf(cert(signer)),
    chain: path,
    genTime: t.tst.genTime.toISOString(),
    hashAlgorithm: imprint.algorithm,
    imprint: `${imprint.algorithm}:${imprint.value.toString('hex')}`,
    serialNumber: t.tst.serial.toString('hex'),
    policy: t.tst.policy,
    ...(t.tst.nonce !== undefined ? { nonce: t.tst.nonce.toString() } : {}),
    certificatesEmbedded: t.embeddedCerts.length,
    ...(t.status !== undefined ? { status: t.status } : {}),
    ...(digest ? { digest: `${digest.algorithm}:${digest.value.toString('hex')}` } : {}),
  };
}
