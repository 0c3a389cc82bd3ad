// One RFC 3161 token, offline: parsed strictly, signed by the certificate the ESS attribute
// names, that certificate chaining to the given root at genTime with a critical timeStamping
// EKU, and the token committing to the expected digest, nonce and earliest time.
// Used by `anchor verify` and by the ledger's `verify`.
import { X509Certificate } from 'node:crypto';
import { fail } from '../errors.js';
import { parseDigest, type DigestSpec } from '../encoding.js';
import { parseTimeStamp } from './token.js';
import { parseTrustBundle, signerCandidates, verifyChain } from './chain.js';
import { pickSignerByEss } from './ess.js';
import { verifyTokenSignature } from './signature.js';
import { verifyTimeStampingEku } from './eku.js';
import { checkGenTime, checkImprint, checkNonce, tokenImprint, tokenNonce } from './imprint.js';

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
  let digest: DigestSpec | undefined;
  if (opts.digest !== undefined) {
    digest = typeof opts.digest === 'string' ? (parseDigest(opts.digest) ?? fail('malformed', 'digest: expected sha256:HEX')) : opts.digest;
  }
  const bundle = parseTrustBundle(chainPem);
  const t = parseTimeStamp(der);
  const candidates = signerCandidates(t, bundle);
  if (candidates.length === 0) fail('tsa_chain_invalid', "the signing certificate is neither in the token nor in the given chain");
  const signer = pickSignerByEss(t, candidates);
  verifyTokenSignature(t, signer);
  const genTime = t.tstInfo.genTime;
  const path = await verifyChain(t, signer, bundle, genTime);
  verifyTimeStampingEku(signer);
  const imprint = tokenImprint(t.tstInfo);
  if (digest) checkImprint(t.tstInfo, digest);
  if (opts.nonce !== undefined) checkNonce(t.tstInfo, opts.nonce);
  if (opts.notBefore !== undefined) checkGenTime(t.tstInfo, new Date(opts.notBefore));
  const nonce = tokenNonce(t.tstInfo);
  return {
    tsa: new X509Certificate(signer).subject.replace(/\n/g, ', '),
    chain: path,
    genTime: genTime.toISOString(),
    hashAlgorithm: imprint.algorithm,
    imprint: `${imprint.algorithm}:${imprint.value.toString('hex')}`,
    serialNumber: Buffer.from(t.tstInfo.serialNumber.valueBlock.valueHexView).toString('hex'),
    policy: t.tstInfo.policy,
    ...(nonce !== undefined ? { nonce: nonce.toString() } : {}),
    certificatesEmbedded: t.embeddedCerts.length,
    ...(t.status !== undefined ? { status: t.status } : {}),
    ...(digest ? { digest: `${digest.algorithm}:${digest.value.toString('hex')}` } : {}),
  };
}
