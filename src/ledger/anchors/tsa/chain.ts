// Certificate path: guards against a token from a TSA we do not trust. The signing certificate
// (found by the signer id among the token's certificates and the given bundle) must chain to the
// bundle's last certificate, a self-signed root, with every certificate valid at genTime (a TSA
// whose certificate has since expired still vouches for times inside its validity). Every
// certificate the token embeds must chain too: an altered embedded certificate is an altered token.
import { X509Certificate } from 'node:crypto';
import * as pkijs from 'pkijs';
import { fail } from '../errors.js';
import { parseCertificates } from '../encoding.js';
import type { ParsedTimeStamp } from './token.js';

export type TrustBundle = { anchor: Buffer; intermediates: Buffer[] };

export function parseTrustBundle(pem: string): TrustBundle {
  const certs = parseCertificates(pem, 'tsa root');
  const anchor = certs[certs.length - 1];
  const x = new X509Certificate(anchor);
  if (!x.checkIssued(x) || !x.verify(x.publicKey)) fail('key_invalid', 'tsa root: the last certificate is not self-signed');
  return { anchor, intermediates: certs.slice(0, -1) };
}

function uniq(list: Buffer[]): Buffer[] {
  const out: Buffer[] = [];
  for (const c of list) if (!out.some((o) => o.equals(c))) out.push(c);
  return out;
}

/** Certificates that match the SignerInfo's sid (issuer and serial, or subject key id). */
export function signerCandidates(t: ParsedTimeStamp, bundle: TrustBundle): Buffer[] {
  const sid = t.signerInfo.sid;
  return uniq([...t.embeddedCerts, ...bundle.intermediates, bundle.anchor]).filter((der) => {
    const c = pkijs.Certificate.fromBER(new Uint8Array(der));
    if (sid instanceof pkijs.IssuerAndSerialNumber) {
      return c.issuer.isEqual(sid.issuer) && c.serialNumber.isEqual(sid.serialNumber);
    }
    const ski = c.extensions?.find((e) => e.extnID === '2.5.29.14');
    const want = Buffer.from((sid as { valueBlock: { valueHexView: Uint8Array } }).valueBlock.valueHexView);
    return !!ski && Buffer.from((ski.parsedValue as { valueBlock: { valueHexView: Uint8Array } }).valueBlock.valueHexView).equals(want);
  });
}

async function chains(certDer: Buffer, pool: Buffer[], anchor: Buffer, at: Date): Promise<string[] | null> {
  const toCert = (d: Buffer) => pkijs.Certificate.fromBER(new Uint8Array(d));
  const target = toCert(certDer);
  const engine = new pkijs.CertificateChainValidationEngine({
    trustedCerts: [toCert(anchor)],
    certs: [...pool.filter((p) => !p.equals(certDer)).map(toCert), target],
    checkDate: at,
  });
  try {
    const r = await engine.verify();
    if (!r.result) return null;
    return (r.certificatePath ?? []).map((c) => new X509Certificate(Buffer.from(c.toSchema().toBER(false))).subject.replace(/\n/g, ', '));
  } catch {
    return null;
  }
}

/** Validates the signer's path (returned, leaf first) and every embedded certificate at `at`. */
export async function verifyChain(t: ParsedTimeStamp, signer: Buffer, bundle: TrustBundle, at: Date): Promise<string[]> {
  const pool = uniq([...t.embeddedCerts, ...bundle.intermediates]);
  const path = await chains(signer, pool, bundle.anchor, at);
  if (!path) fail('tsa_chain_invalid', 'signing certificate does not chain to the given root at genTime');
  for (const c of t.embeddedCerts) {
    if (c.equals(signer) || c.equals(bundle.anchor)) continue;
    if (!(await chains(c, pool, bundle.anchor, at))) fail('tsa_chain_invalid', 'an embedded certificate does not chain to the given root');
  }
  return path;
}
