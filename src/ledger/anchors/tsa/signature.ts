// The CMS signature: guards against a TSTInfo (time, imprint, nonce) or signed attribute edited
// after the TSA signed it. messageDigest must be the digest of the TSTInfo bytes, and the
// signature over the DER signed attributes must verify with the signing certificate's key.
// Verification goes through node:crypto (OpenSSL), which also refuses non-DER ECDSA signatures.
import { createHash, verify as cryptoVerify, X509Certificate } from 'node:crypto';
import * as asn1js from 'asn1js';
import { fail } from '../errors.js';
import { signedAttr } from './attributes.js';
import { HASH_BY_OID, OID, type HashName } from './oids.js';
import { paramsAbsentOrNull, type ParsedTimeStamp } from './token.js';

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
  const digestAlg = HASH_BY_OID[si.digestAlgorithm.algorithmId];
  const ct = signedAttr(si, OID.contentTypeAttr, true);
  if (!(ct instanceof asn1js.ObjectIdentifier) || ct.valueBlock.toString() !== OID.tstInfo) {
    fail('tsa_signature_invalid', 'signed contentType attribute is not TSTInfo');
  }
  const md = signedAttr(si, OID.messageDigestAttr, true);
  if (!(md instanceof asn1js.OctetString)) fail('malformed', 'messageDigest is not an OCTET STRING');
  const expected = createHash(digestAlg).update(t.eContent).digest();
  if (!expected.equals(Buffer.from(md.valueBlock.valueHexView))) {
    fail('tsa_signature_invalid', 'messageDigest does not match the TSTInfo');
  }
  const alg = SIG_ALGS[si.signatureAlgorithm.algorithmId];
  if (!alg || !paramsAbsentOrNull(si.signatureAlgorithm)) fail('tsa_signature_invalid', 'unsupported signature algorithm');
  const key = new X509Certificate(signerCertDer).publicKey;
  if (key.asymmetricKeyType !== alg.kind) fail('tsa_signature_invalid', 'signature algorithm does not fit the signing key');
  const signed = Buffer.from(si.signedAttrs!.encodedValue); // pkijs gives it with the SET tag (0x31)
  const sig = Buffer.from(si.signature.valueBlock.valueHexView);
  let ok = false;
  try {
    if (alg.kind === 'ed25519') ok = cryptoVerify(null, signed, key, sig);
    else if (alg.kind === 'ec') ok = cryptoVerify(alg.hash ?? digestAlg, signed, { key, dsaEncoding: 'der' }, sig);
    else ok = cryptoVerify(alg.hash ?? digestAlg, signed, key, sig);
  } catch {
    ok = false;
  }
  if (!ok) fail('tsa_signature_invalid', 'CMS signature does not verify with the signing certificate');
}
