// ESS signing-certificate attribute (RFC 2634 / RFC 5035, required by RFC 3161 section 2.4.1):
// binds the signature to one certificate, so a different certificate with the same key or name
// cannot be substituted. pkijs does not check it; we do: the first ESSCertID(v2) of each present
// attribute must carry the hash of the signing certificate and, when present, its issuer and
// serial number.
import { createHash } from 'node:crypto';
import { algorithm, expect, T, type Der } from '../der.js';
import { fail } from '../errors.js';
import { cert } from './certs.js';
import { HASH_BY_OID, HASH_LEN, OID, type HashName } from './oids.js';
import { paramsAbsentOrNull, signedAttr, type ParsedTimeStamp } from './token.js';

type CertId = { hash: HashName; certHash: Buffer; issuerSerial?: { issuer: Buffer; serial: Buffer } };

function parseCertId(v: Der, version: 1 | 2): CertId {
  const parts = expect(v, T.SEQUENCE, 'ESSCertID').children;
  let i = 0;
  let hash: HashName = version === 1 ? 'sha1' : 'sha256';
  if (version === 2 && parts[i]?.tag === T.SEQUENCE) {
    const alg = algorithm(parts[i++], 'ESSCertIDv2 hashAlgorithm');
    const h = HASH_BY_OID[alg.oid];
    if (!h || !paramsAbsentOrNull(alg.params)) fail('tsa_ess_mismatch', 'ESSCertIDv2 uses an unsupported hash');
    hash = h;
  }
  const certHash = expect(parts[i++], T.OCTET_STRING, 'ESSCertID certHash').content;
  if (certHash.length !== HASH_LEN[hash]) fail('tsa_ess_mismatch', 'ESSCertID hash has the wrong length');
  const out: CertId = { hash, certHash };
  if (i < parts.length) {
    // IssuerSerial ::= SEQUENCE { issuer GeneralNames, serialNumber INTEGER }
    const is = expect(parts[i++], T.SEQUENCE, 'IssuerSerial').children;
    const names = expect(is[0], T.SEQUENCE, 'GeneralNames').children;
    if (is.length !== 2 || names.length !== 1 || names[0].tag !== 0xa4 || names[0].children.length !== 1) {
      fail('tsa_ess_mismatch', 'ESS issuerSerial does not name one directory issuer');
    }
    out.issuerSerial = { issuer: expect(names[0].children[0], T.SEQUENCE, 'issuer').bytes, serial: expect(is[1], T.INTEGER, 'serial').content };
  }
  if (i !== parts.length) fail('malformed', 'ESSCertID: trailing fields');
  return out;
}

function certIds(t: ParsedTimeStamp): CertId[] {
  const out: CertId[] = [];
  for (const [oidv, version] of [
    [OID.signingCertificateV2, 2],
    [OID.signingCertificate, 1],
  ] as const) {
    const v = signedAttr(t.signerInfo, oidv, false);
    if (v === undefined) continue;
    const sc = expect(v, T.SEQUENCE, 'SigningCertificate').children;
    const certs = expect(sc[0], T.SEQUENCE, 'SigningCertificate.certs').children;
    if (certs.length === 0) fail('tsa_ess_mismatch', 'SigningCertificate lists no certificate');
    out.push(parseCertId(certs[0], version));
  }
  if (out.length === 0) fail('tsa_ess_mismatch', 'token has no ESS signing-certificate attribute');
  return out;
}

function names(id: CertId, der: Buffer): boolean {
  const c = cert(der);
  return (
    createHash(id.hash).update(der).digest().equals(id.certHash) &&
    (!id.issuerSerial || (id.issuerSerial.issuer.equals(c.issuer) && id.issuerSerial.serial.equals(c.serial)))
  );
}

/** The signing certificate among the candidates (those matching the signer id): the one ESS names. */
export function pickSignerByEss(t: ParsedTimeStamp, candidates: Buffer[]): Buffer {
  const ids = certIds(t);
  const named = candidates.find((c) => ids.every((id) => names(id, c)));
  if (!named) fail('tsa_ess_mismatch', 'ESS signing-certificate attribute does not name the signing certificate');
  return named;
}
