// Parses an RFC 3161 TimeStampToken (CMS ContentInfo) or a whole TimeStampResp. Guards against
// tokens that only look like the signed one: input must be DER (re-encoding gives the same bytes,
// no trailing data), and every unsigned field that could change meaning (versions, the content
// type, the digest algorithm set, algorithm parameters) must have its one expected value.
import * as asn1js from 'asn1js';
import * as pkijs from 'pkijs';
import { fail } from '../errors.js';
import { HASH_BY_OID, OID } from './oids.js';

export type ParsedTimeStamp = {
  status?: number;
  tokenDer: Buffer;
  signedData: pkijs.SignedData;
  signerInfo: pkijs.SignerInfo;
  eContent: Buffer;
  tstInfo: pkijs.TSTInfo;
  embeddedCerts: Buffer[];
};

function strictDer(bytes: Uint8Array, what: string): asn1js.AsnType {
  const copy = new Uint8Array(bytes); // own ArrayBuffer
  const a = asn1js.fromBER(copy.buffer);
  if (a.offset === -1 || a.offset !== copy.length) fail('malformed', `${what}: not one DER value`);
  let re: Buffer;
  try {
    re = Buffer.from(a.result.toBER(false));
  } catch {
    fail('malformed', `${what}: cannot re-encode`);
  }
  if (!re.equals(Buffer.from(copy))) fail('malformed', `${what}: not DER`);
  return a.result;
}

function derOf(v: { toSchema(): asn1js.AsnType }): Buffer {
  return Buffer.from(v.toSchema().toBER(false));
}

/** Algorithm parameters must be absent or NULL for the hash and signature algorithms we accept. */
export function paramsAbsentOrNull(alg: pkijs.AlgorithmIdentifier): boolean {
  const p = (alg as { algorithmParams?: asn1js.AsnType }).algorithmParams;
  if (p === undefined || p === null) return true;
  if (!(p instanceof asn1js.Null)) return false;
  return Buffer.from(p.toBER(false)).equals(Buffer.from([0x05, 0x00]));
}

export function parseTimeStamp(der: Uint8Array): ParsedTimeStamp {
  const root = strictDer(der, 'timestamp');
  if (!(root instanceof asn1js.Sequence)) fail('malformed', 'timestamp: not a SEQUENCE');
  const items = root.valueBlock.value;
  let status: number | undefined;
  let tokenAsn: asn1js.AsnType = root;
  if (items[0] instanceof asn1js.Sequence) {
    // TimeStampResp ::= SEQUENCE { status PKIStatusInfo, timeStampToken TimeStampToken OPTIONAL }
    const statusInfo = items[0].valueBlock.value;
    if (!(statusInfo[0] instanceof asn1js.Integer)) fail('malformed', 'TimeStampResp: bad status');
    status = statusInfo[0].valueBlock.valueDec;
    if (status !== 0 && status !== 1) fail('tsa_status', `TimeStampResp status ${status} (not granted)`);
    if (items.length !== 2) fail('malformed', 'TimeStampResp: no token');
    tokenAsn = items[1];
  } else if (items.length !== 2) {
    fail('malformed', 'timestamp: not a ContentInfo');
  }
  let signedData: pkijs.SignedData;
  let tstInfo: pkijs.TSTInfo;
  let eContent: Buffer;
  try {
    const ci = new pkijs.ContentInfo({ schema: tokenAsn });
    if (ci.contentType !== OID.signedData) fail('malformed', 'token: content is not SignedData');
    signedData = new pkijs.SignedData({ schema: ci.content });
    const eci = signedData.encapContentInfo;
    if (eci.eContentType !== OID.tstInfo) fail('malformed', 'token: content is not a TSTInfo');
    if (!eci.eContent || !(eci.eContent instanceof asn1js.OctetString) || eci.eContent.idBlock.isConstructed) {
      fail('malformed', 'token: TSTInfo is not one primitive OCTET STRING');
    }
    eContent = Buffer.from(eci.eContent.valueBlock.valueHexView);
    tstInfo = new pkijs.TSTInfo({ schema: strictDer(eContent, 'TSTInfo') });
  } catch (e) {
    if ((e as { code?: string }).code) throw e;
    fail('malformed', 'token: not an RFC 3161 TimeStampToken');
  }
  if (signedData.version !== 3) fail('malformed', 'SignedData version is not 3');
  if (signedData.signerInfos.length !== 1) fail('malformed', 'token must have exactly one signer');
  const signerInfo = signedData.signerInfos[0];
  const sidIsKeyId = !(signerInfo.sid instanceof pkijs.IssuerAndSerialNumber);
  if (signerInfo.version !== (sidIsKeyId ? 3 : 1)) fail('malformed', 'SignerInfo version does not match its identifier');
  if (!HASH_BY_OID[signerInfo.digestAlgorithm.algorithmId] || !paramsAbsentOrNull(signerInfo.digestAlgorithm)) {
    fail('malformed', 'unsupported signer digest algorithm');
  }
  const signerAlg = derOf(signerInfo.digestAlgorithm);
  if (!signedData.digestAlgorithms.some((a) => derOf(a).equals(signerAlg))) {
    fail('malformed', "SignedData digestAlgorithms does not list the signer's");
  }
  if (!signerInfo.signedAttrs) fail('malformed', 'token has no signed attributes');
  if (tstInfo.version !== 1) fail('malformed', 'TSTInfo version is not 1');
  const embeddedCerts: Buffer[] = [];
  for (const c of signedData.certificates ?? []) {
    if (!(c instanceof pkijs.Certificate)) fail('malformed', 'token embeds a non-X.509 certificate');
    embeddedCerts.push(derOf(c));
  }
  const tokenDer = Buffer.from(tokenAsn.toBER(false));
  return { status, tokenDer, signedData, signerInfo, eContent, tstInfo, embeddedCerts };
}
