// ESS signing-certificate attribute (RFC 2634 / RFC 5035, required by RFC 3161 section 2.4.1):
// binds the signature to one certificate, so a different certificate with the same key or name
// cannot be substituted. pkijs does not check it; we do: the first ESSCertID(v2) must carry the
// hash of the signing certificate and, when present, its issuer and serial number.
import { createHash } from 'node:crypto';
import * as asn1js from 'asn1js';
import * as pkijs from 'pkijs';
import { fail } from '../errors.js';
import { signedAttr } from './attributes.js';
import { HASH_BY_OID, OID, type HashName } from './oids.js';
import type { ParsedTimeStamp } from './token.js';

type CertId = { hash: HashName; certHash: Buffer; issuerSerial?: { issuer: Buffer; serial: Buffer } };

function seq(v: unknown, what: string): asn1js.AsnType[] {
  if (!(v instanceof asn1js.Sequence)) fail('malformed', `${what}: not a SEQUENCE`);
  return v.valueBlock.value;
}

function parseCertId(v: unknown, version: 1 | 2): CertId {
  const parts = seq(v, 'ESSCertID');
  let i = 0;
  let hash: HashName = version === 1 ? 'sha1' : 'sha256';
  if (version === 2 && parts[i] instanceof asn1js.Sequence) {
    const alg = new pkijs.AlgorithmIdentifier({ schema: parts[i++] });
    const h = HASH_BY_OID[alg.algorithmId];
    if (!h) fail('tsa_ess_mismatch', 'ESSCertIDv2 uses an unsupported hash');
    hash = h;
  }
  const certHash = parts[i++];
  if (!(certHash instanceof asn1js.OctetString)) fail('malformed', 'ESSCertID: certHash is not an OCTET STRING');
  const out: CertId = { hash, certHash: Buffer.from(certHash.valueBlock.valueHexView) };
  if (i < parts.length) {
    // IssuerSerial ::= SEQUENCE { issuer GeneralNames, serialNumber INTEGER }
    const is = seq(parts[i++], 'IssuerSerial');
    const names = seq(is[0], 'GeneralNames');
    if (names.length !== 1 || names[0].idBlock.tagClass !== 3 || names[0].idBlock.tagNumber !== 4) {
      fail('tsa_ess_mismatch', 'ESS issuerSerial does not name a directory issuer');
    }
    const dn = (names[0] as asn1js.Constructed).valueBlock.value[0];
    if (!(is[1] instanceof asn1js.Integer) || !dn) fail('malformed', 'ESS issuerSerial: bad serial');
    out.issuerSerial = { issuer: Buffer.from(dn.toBER(false)), serial: Buffer.from(is[1].valueBlock.valueHexView) };
  }
  if (i !== parts.length) fail('malformed', 'ESSCertID: trailing fields');
  return out;
}

function certIds(t: ParsedTimeStamp): CertId[] {
  const out: CertId[] = [];
  for (const [oid, version] of [
    [OID.signingCertificateV2, 2],
    [OID.signingCertificate, 1],
  ] as const) {
    const v = signedAttr(t.signerInfo, oid, false);
    if (v === undefined) continue;
    const certs = seq(seq(v, 'SigningCertificate')[0], 'SigningCertificate.certs');
    if (certs.length === 0) fail('tsa_ess_mismatch', 'SigningCertificate lists no certificate');
    out.push(parseCertId(certs[0], version));
  }
  if (out.length === 0) fail('tsa_ess_mismatch', 'token has no ESS signing-certificate attribute');
  return out;
}

/** True when every ESS cert id in the token names this certificate. */
export function essNames(t: ParsedTimeStamp, certDer: Buffer): boolean {
  const cert = pkijs.Certificate.fromBER(new Uint8Array(certDer));
  const issuer = Buffer.from(cert.issuer.toSchema().toBER(false));
  const serial = Buffer.from(cert.serialNumber.valueBlock.valueHexView);
  return certIds(t).every(
    (id) =>
      createHash(id.hash).update(certDer).digest().equals(id.certHash) &&
      (!id.issuerSerial || (id.issuerSerial.issuer.equals(issuer) && id.issuerSerial.serial.equals(serial))),
  );
}

/** The signing certificate among the candidates (matching the signer id): the one ESS names. */
export function pickSignerByEss(t: ParsedTimeStamp, candidates: Buffer[]): Buffer {
  certIds(t); // structural checks even when there is no candidate
  const named = candidates.find((c) => essNames(t, c));
  if (!named) fail('tsa_ess_mismatch', 'ESS signing-certificate attribute does not name the signing certificate');
  return named;
}
