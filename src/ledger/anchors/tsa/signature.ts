// The CMS signature: guards against a TSTInfo (time, imprint, nonce) or signed attribute edited
// after the TSA signed it. The contentType attribute must be TSTInfo, messageDigest must be the
// digest of the TSTInfo bytes, and the signature over the DER signed attributes must verify with
// the signing certificate's key (node:crypto / OpenSSL, which refuses non-DER ECDSA signatures).
import { createHash, verify as cryptoVerify } from 'node:crypto';
import { expect, oid, T } from '../der.js';
import { fail } from '../errors.js';
import { cert } from './certs.js';
import { OID, type HashName } from './oids.js';
import { paramsAbsentOrNull, signedAttr, type ParsedTimeStamp } from './token.js';

const SIG_ALGS: Record<string, { kind: 'ec' | 'rsa' | 'ed25519'; hash?: HashName }> = {
  '1.2.840.10045.4.3.2': { kind: 'ec', hash: 'sha256' },
  '1.2.840.10045.4.3.3': { kind: 'ec', hash: 'sha384' },
  '1.2.840.10045.4.3.4': { kind: 'ec', hash: 'sha512' },
  '1.2.840.10045.2.1': { kind: 'ec' }, // ecPublicKey: hash from digestAlgorithm
  '1.2.840.113549.1.1.1': { kind: 'rsa' }, // rsaEncryption: hash from digestAlgorithm
  '1.2.840.113549.1.1.11': { kind: 'rsa', hash: 'sha256' },
  '1.2.840.113549.1.1.12': { kind: 'rsa', hash: 'sha384' },
  '1.2.840.113549.1.1.13': { kind: 'rsa', hash: 'sha512' },
  '1.3.101.112': { kind: 'ed25519' },
};

export function verifyTokenSignature(t: ParsedTimeStamp, signerCertDer: Buffer): void {
  const si = t.signerInfo;
  if (oid(signedAttr(si, OID.contentTypeAttr, true), 'contentType attribute') !== OID.tstInfo) {
    fail('tsa_signature_invalid', 'signed contentType attribute is not TSTInfo');
  }
  const md = expect(signedAttr(si, OID.messageDigestAttr, true), T.OCTET_STRING, 'messageDigest').content;
  if (!createHash(si.digestAlgorithm).update(t.eContent).digest().equals(md)) {
    fail('tsa_signature_invalid', 'messageDigest does not match the TSTInfo');
  }
  const alg = SIG_ALGS[si.signatureAlgorithm.oid];
  const edOk = alg?.kind !== 'ed25519' || si.signatureAlgorithm.params === undefined;
  if (!alg || !edOk || !paramsAbsentOrNull(si.signatureAlgorithm.params)) fail('tsa_signature_invalid', 'unsupported signature algorithm');
  if (alg.kind === 'ec' && si.signatureAlgorithm.params !== undefined) fail('tsa_signature_invalid', 'ECDSA algorithm with parameters');
  const key = cert(signerCertDer).x509.publicKey;
  if (key.asymmetricKeyType !== alg.kind) fail('tsa_signature_invalid', 'signature algorithm does not fit the signing key');
  let ok = false;
  try {
    if (alg.kind === 'ed25519') ok = cryptoVerify(null, si.signedAttrsDer, key, si.signature);
    else if (alg.kind === 'ec') ok = cryptoVerify(alg.hash ?? si.digestAlgorithm, si.signedAttrsDer, { key, dsaEncoding: 'der' }, si.signature);
    else ok = cryptoVerify(alg.hash ?? si.digestAlgorithm, si.signedAttrsDer, key, si.signature);
  } catch {
    ok = false;
  }
  if (!ok) fail('tsa_signature_invalid', 'CMS signature does not verify with the signing certificate');
}
