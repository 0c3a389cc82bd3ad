// Parses an RFC 3161 TimeStampToken (CMS ContentInfo) or a whole TimeStampResp with our strict
// DER reader. Guards against tokens that only look like the signed one: every unsigned field that
// could change meaning (versions, content types, the digest algorithm set, algorithm parameters,
// certificates moved into other fields) must have its one expected form.
//
// Unsigned variations that ARE tolerated, each because a real TSA emits it and nothing read from
// it can change a verdict:
//  - TimeStampResp status granted (0) or grantedWithMods (1), with or without a statusString
//    (RFC 3161 section 2.4.2: both carry a token; the free text is never read). A failInfo is
//    refused: it contradicts a granted status.
//  - Hash AlgorithmIdentifier parameters absent or NULL (RFC 5754 section 2 requires accepting
//    both; sigstore/GitHub omit them, freetsa sends NULL). Other parameters are refused.
//  - SignerInfo identified by issuerAndSerialNumber (version 1) or subjectKeyIdentifier
//    (version 3), as RFC 5652 allows; either must match, byte for byte, the certificate the
//    signed ESS attribute names.
//  - The certificates bag present, empty or absent, in any order, with repeats: it is a hint.
//    At most MAX_EMBEDDED_CERTS are read (a bag is unsigned, so its size is the attacker's
//    choice), and every certificate in it must itself chain to the given root (chain.ts).
// Everything else unsigned has exactly one form: SignedData version 3, digestAlgorithms holding
// exactly the signer's algorithm (one signer, one digest), no crls, one SignerInfo, no
// unsignedAttrs (RFC 3161 defines none, and bytes we never read would ride along unverified).
import { algorithm, expect, generalizedTime, integer, oid, parseDer, T, type Der } from '../der.js';
import { fail } from '../errors.js';
import { HASH_BY_OID, HASH_LEN, OID, type HashName } from './oids.js';

export type Attribute = { type: string; values: Der[] };

export type SignerInfo = {
  sid: { issuer: Buffer; serial: Buffer } | { keyId: Buffer };
  digestAlgorithm: HashName;
  digestAlgorithmDer: Buffer;
  signedAttrs: Attribute[];
  signedAttrsDer: Buffer; // as signed: the [0] IMPLICIT field re-tagged as SET (0x31)
  signatureAlgorithm: { oid: string; params?: Der };
  signature: Buffer;
};

export type TstInfo = {
  policy: string;
  imprint: { algorithm: HashName; value: Buffer };
  serial: Buffer;
  genTime: Date;
  nonce?: bigint;
};

export type ParsedTimeStamp = {
  status?: number;
  signerInfo: SignerInfo;
  eContent: Buffer;
  tst: TstInfo;
  embeddedCerts: Buffer[];
};

/** Parameters must be absent or NULL for the hash and signature algorithms we accept. */
export function paramsAbsentOrNull(params: Der | undefined): boolean {
  return params === undefined || params.tag === T.NULL;
}

/** The most certificates a token's (unsigned) bag may hold: real TSAs embed 0 to 4. */
export const MAX_EMBEDDED_CERTS = 16;
/**
 * The largest token (or TimeStampResp) read at all: real ones are 0.7 to 6 KB (freetsa, with two
 * RSA-4096 certificates, is 5.4 KB). Refused before parsing, so the cost of an oversized, stuffed
 * token is not its size.
 */
export const MAX_TOKEN_BYTES = 256 * 1024;

function parseTstInfo(bytes: Buffer): TstInfo {
  const s = expect(parseDer(bytes), T.SEQUENCE, 'TSTInfo').children;
  if (integer(s[0], 'TSTInfo version') !== 1n) fail('malformed', 'TSTInfo version is not 1');
  const policy = oid(s[1], 'TSTInfo policy');
  const mi = expect(s[2], T.SEQUENCE, 'messageImprint').children;
  if (mi.length !== 2) fail('malformed', 'messageImprint: bad structure');
  const alg = algorithm(mi[0], 'messageImprint algorithm');
  const h = HASH_BY_OID[alg.oid];
  if (!h || !paramsAbsentOrNull(alg.params)) fail('malformed', 'messageImprint: unsupported hash');
  const value = expect(mi[1], T.OCTET_STRING, 'messageImprint').content;
  if (value.length !== HASH_LEN[h]) fail('malformed', 'messageImprint: wrong length for its hash');
  const serial = expect(s[3], T.INTEGER, 'TSTInfo serial').content;
  const genTime = generalizedTime(s[4], 'genTime');
  let i = 5;
  if (s[i]?.tag === T.SEQUENCE) i++; // accuracy
  if (s[i]?.tag === T.BOOLEAN) {
    if (s[i].content[0] === 0) fail('malformed', 'TSTInfo ordering: DEFAULT FALSE encoded');
    i++;
  }
  let nonce: bigint | undefined;
  if (s[i]?.tag === T.INTEGER) nonce = integer(s[i++], 'nonce');
  if (s[i]?.tag === 0xa0) i++; // tsa [0] GeneralName
  if (s[i]?.tag === 0xa1) i++; // extensions [1]
  if (i !== s.length) fail('malformed', 'TSTInfo: unexpected fields');
  return { policy, imprint: { algorithm: h, value }, serial, genTime, nonce };
}

function parseSignerInfo(n: Der): SignerInfo {
  const s = expect(n, T.SEQUENCE, 'SignerInfo').children;
  const version = integer(s[0], 'SignerInfo version');
  let sid: SignerInfo['sid'];
  if (s[1]?.tag === T.SEQUENCE) {
    if (version !== 1n) fail('malformed', 'SignerInfo version does not match its identifier');
    const ias = s[1].children;
    if (ias.length !== 2) fail('malformed', 'issuerAndSerialNumber: bad structure');
    sid = { issuer: expect(ias[0], T.SEQUENCE, 'sid issuer').bytes, serial: expect(ias[1], T.INTEGER, 'sid serial').content };
  } else if (s[1]?.tag === 0x80) {
    if (version !== 3n) fail('malformed', 'SignerInfo version does not match its identifier');
    sid = { keyId: s[1].content };
  } else {
    fail('malformed', 'SignerInfo: bad signer identifier');
  }
  const dAlg = algorithm(s[2], 'digestAlgorithm');
  const digestAlgorithm = HASH_BY_OID[dAlg.oid];
  if (!digestAlgorithm || !paramsAbsentOrNull(dAlg.params)) fail('malformed', 'unsupported signer digest algorithm');
  const sa = s[3];
  if (!sa || sa.tag !== 0xa0) fail('malformed', 'token has no signed attributes');
  const signedAttrs = sa.children.map((a) => {
    const parts = expect(a, T.SEQUENCE, 'attribute').children;
    if (parts.length !== 2) fail('malformed', 'attribute: bad structure');
    return { type: oid(parts[0], 'attribute type'), values: expect(parts[1], T.SET, 'attribute values').children };
  });
  const signedAttrsDer = Buffer.from(sa.bytes);
  signedAttrsDer[0] = T.SET;
  const sigAlg = algorithm(s[4], 'signatureAlgorithm');
  const signature = expect(s[5], T.OCTET_STRING, 'signature').content;
  if (s.length === 7 && s[6].tag === 0xa1) fail('malformed', 'SignerInfo carries unsigned attributes, which this verifier does not read');
  if (s.length !== 6) fail('malformed', 'SignerInfo: unexpected fields');
  return {
    sid,
    digestAlgorithm,
    digestAlgorithmDer: dAlg.bytes,
    signedAttrs,
    signedAttrsDer,
    signatureAlgorithm: { oid: sigAlg.oid, params: sigAlg.params },
    signature,
  };
}

export function parseTimeStamp(der: Uint8Array): ParsedTimeStamp {
  if (der.length > MAX_TOKEN_BYTES) fail('malformed', `token is ${der.length} bytes; at most ${MAX_TOKEN_BYTES} are read`);
  const root = expect(parseDer(der), T.SEQUENCE, 'timestamp');
  let status: number | undefined;
  let ci = root;
  if (root.children[0]?.tag === T.SEQUENCE) {
    // TimeStampResp ::= SEQUENCE { status PKIStatusInfo, timeStampToken TimeStampToken OPTIONAL }
    const info = root.children[0].children;
    const st = integer(info[0], 'PKIStatus');
    status = Number(st);
    if (st !== 0n && st !== 1n) fail('tsa_status', `TimeStampResp status ${st} (not granted)`);
    // PKIStatusInfo ::= SEQUENCE { status, statusString PKIFreeText OPTIONAL, failInfo OPTIONAL }
    if (info.length > 2 || (info.length === 2 && (info[1].tag !== T.SEQUENCE || info[1].children.some((u) => u.tag !== T.UTF8)))) {
      fail('malformed', 'TimeStampResp: a granted status carries only an optional statusString');
    }
    if (root.children.length !== 2) fail('malformed', 'TimeStampResp: no token');
    ci = expect(root.children[1], T.SEQUENCE, 'TimeStampToken');
  }
  if (ci.children.length !== 2) fail('malformed', 'token: not a ContentInfo');
  if (oid(ci.children[0], 'contentType') !== OID.signedData) fail('malformed', 'token: content is not SignedData');
  const wrap = ci.children[1];
  if (wrap.tag !== 0xa0 || wrap.children.length !== 1) fail('malformed', 'token: bad content');
  const sd = expect(wrap.children[0], T.SEQUENCE, 'SignedData').children;
  if (integer(sd[0], 'SignedData version') !== 3n) fail('malformed', 'SignedData version is not 3');
  const digestAlgs = expect(sd[1], T.SET, 'digestAlgorithms').children.map((a) => a.bytes);
  const eci = expect(sd[2], T.SEQUENCE, 'encapContentInfo').children;
  if (eci.length !== 2 || oid(eci[0], 'eContentType') !== OID.tstInfo) fail('malformed', 'token: content is not a TSTInfo');
  if (eci[1].tag !== 0xa0 || eci[1].children.length !== 1) fail('malformed', 'token: bad eContent');
  const eContent = expect(eci[1].children[0], T.OCTET_STRING, 'eContent').content;
  let i = 3;
  const embeddedCerts: Buffer[] = [];
  if (sd[i]?.tag === 0xa0) {
    if (sd[i].children.length > MAX_EMBEDDED_CERTS) {
      fail('malformed', `token embeds ${sd[i].children.length} certificates; at most ${MAX_EMBEDDED_CERTS} are read`);
    }
    for (const c of sd[i].children) embeddedCerts.push(expect(c, T.SEQUENCE, 'certificate').bytes);
    i++;
  }
  if (sd[i]?.tag === 0xa1) fail('malformed', 'token carries revocation data, which this verifier does not read');
  const infos = expect(sd[i], T.SET, 'signerInfos').children;
  if (i + 1 !== sd.length) fail('malformed', 'SignedData: unexpected fields');
  if (infos.length !== 1) fail('malformed', 'token must have exactly one signer');
  const signerInfo = parseSignerInfo(infos[0]);
  if (digestAlgs.length !== 1 || !digestAlgs[0].equals(signerInfo.digestAlgorithmDer)) {
    fail('malformed', "SignedData digestAlgorithms is not exactly the signer's digest algorithm");
  }
  return { status, signerInfo, eContent, tst: parseTstInfo(eContent), embeddedCerts };
}

/** A signed attribute that must appear at most once, with exactly one value (RFC 5652). */
export function signedAttr(si: SignerInfo, type: string, required: boolean): Der | undefined {
  const found = si.signedAttrs.filter((a) => a.type === type);
  if (found.length > 1) fail('malformed', `signed attribute ${type} appears more than once`);
  if (found.length === 0) {
    if (required) fail('malformed', `signed attribute ${type} is missing`);
    return undefined;
  }
  if (found[0].values.length !== 1) fail('malformed', `signed attribute ${type} must have one value`);
  return found[0].values[0];
}
