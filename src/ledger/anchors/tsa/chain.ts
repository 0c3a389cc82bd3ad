// Certificate path: guards against a token from a TSA we do not trust. The signing certificate
// (found by the signer id among the token's certificates and the given bundle) must chain to the
// bundle's last certificate, a self-signed root, with every certificate valid at genTime (a TSA
// whose certificate has since expired still vouches for times inside its validity). Every
// certificate the token embeds must be a bundle certificate byte for byte, or chain to the root
// too: an altered embedded certificate is an altered token. Path validation is pkijs's
// CertificateChainValidationEngine (signatures, validity at genTime, CA constraints).
import { createHash } from 'node:crypto';
import * as pkijs from 'pkijs';
import { fail } from '../errors.js';
import { parseCertificates } from '../encoding.js';
import { cert, subjectOf } from './certs.js';
import type { ParsedTimeStamp } from './token.js';

export type TrustBundle = { anchor: Buffer; intermediates: Buffer[] };

export function parseTrustBundle(pem: string): TrustBundle {
  const certs = parseCertificates(pem, 'tsa root');
  let x;
  try {
    for (const c of certs) cert(c);
    x = cert(certs[certs.length - 1]).x509;
  } catch {
    fail('key_invalid', 'tsa root: unreadable certificate');
  }
  if (!x.checkIssued(x) || !x.verify(x.publicKey)) fail('key_invalid', 'tsa root: the last certificate is not self-signed');
  return { anchor: certs[certs.length - 1], intermediates: certs.slice(0, -1) };
}

// Linear de-duplication by SHA-256 of the DER (the bag is unsigned input; a pairwise
// comparison would be quadratic in whatever an attacker stuffs into it).
function uniq(list: Buffer[]): Buffer[] {
  const seen = new Set<string>();
  const out: Buffer[] = [];
  for (const c of list) {
    const d = cert(c).digest;
    if (seen.has(d)) continue;
    seen.add(d);
    out.push(c);
  }
  return out;
}

/** Certificates that match the SignerInfo's sid, byte for byte (issuer DER and serial, or key id). */
export function signerCandidates(t: ParsedTimeStamp, bundle: TrustBundle): Buffer[] {
  const sid = t.signerInfo.sid;
  return uniq([...t.embeddedCerts, ...bundle.intermediates, bundle.anchor]).filter((der) => {
    const c = cert(der);
    if ('issuer' in sid) return c.issuer.equals(sid.issuer) && c.serial.equals(sid.serial);
    const ski = c.extensions.find((e) => e.oid === '2.5.29.14');
    // SubjectKeyIdentifier ::= OCTET STRING: 04 len keyId
    return !!ski && ski.value.length === sid.keyId.length + 2 && ski.value.subarray(2).equals(sid.keyId);
  });
}

// Successful path validations, keyed by every input byte and the date (pure memoisation).
const pathCache = new Map<string, string[]>();

type PathResult = { path: string[] } | { why: string };

async function chains(target: Buffer, pool: Buffer[], anchor: Buffer, at: Date): Promise<PathResult> {
  const h = createHash('sha256');
  for (const b of [target, anchor, ...pool]) h.update(cert(b).digest);
  h.update(String(at.getTime()));
  const key = h.digest('base64');
  const hit = pathCache.get(key);
  if (hit) return { path: hit };
  let r: pkijs.CertificateChainValidationEngineVerifyResult;
  try {
    const engine = new pkijs.CertificateChainValidationEngine({
      trustedCerts: [cert(anchor).pkijs()],
      certs: [...pool.filter((p) => !p.equals(target)).map((p) => cert(p).pkijs()), cert(target).pkijs()],
      checkDate: at,
    });
    r = await engine.verify();
  } catch (e) {
    // pkijs throws on some structures it cannot build a path through; say so, do not guess.
    return { why: `path validation failed (${oneLine(e)})` };
  }
  if (!r.result) return { why: r.resultMessage ? oneLine(r.resultMessage) : `path validation failed (code ${r.resultCode})` };
  const path = (r.certificatePath ?? []).map((c) => subjectOf(cert(Buffer.from(c.toSchema().toBER(false)))));
  if (pathCache.size >= 256) pathCache.delete(pathCache.keys().next().value!);
  pathCache.set(key, path);
  return { path };
}

function oneLine(e: unknown): string {
  const m = e instanceof Error ? e.message : String(e);
  return m.replace(/\s+/g, ' ').slice(0, 200);
}

/** Validates the signer's path (returned, leaf first) and every embedded certificate at `at`. */
export async function verifyChain(t: ParsedTimeStamp, signer: Buffer, bundle: TrustBundle, at: Date): Promise<string[]> {
  const bundleCerts = [...bundle.intermediates, bundle.anchor];
  const bundleDigests = new Set(bundleCerts.map((b) => cert(b).digest));
  const bundleTbs = new Set(bundleCerts.map((b) => createHash('sha256').update(cert(b).tbs).digest('base64')));
  const pool = uniq([...t.embeddedCerts, ...bundle.intermediates]);
  const others: Buffer[] = [];
  for (const c of uniq(t.embeddedCerts)) {
    if (bundleDigests.has(cert(c).digest)) continue;
    // pkijs trusts a certificate whose TBS equals a trusted one without checking its signature;
    // an embedded copy of a bundle certificate must therefore be the very same bytes.
    if (bundleTbs.has(createHash('sha256').update(cert(c).tbs).digest('base64'))) fail('tsa_chain_invalid', 'an embedded certificate differs from the given one');
    // Quick refusal (OpenSSL) before the full path check: some known certificate must have signed it.
    const x = cert(c).x509;
    const issued = [...pool, bundle.anchor].some((i) => !i.equals(c) && x.checkIssued(cert(i).x509) && x.verify(cert(i).x509.publicKey));
    if (!issued) fail('tsa_chain_invalid', 'an embedded certificate is not signed by any known certificate');
    if (!c.equals(signer)) others.push(c);
  }
  const r = await chains(signer, pool, bundle.anchor, at);
  if ('why' in r) fail('tsa_chain_invalid', `signing certificate does not chain to the given root at genTime: ${r.why}`);
  for (const c of others) {
    const o = await chains(c, pool, bundle.anchor, at);
    if ('why' in o) fail('tsa_chain_invalid', `an embedded certificate does not chain to the given root: ${o.why}`);
  }
  return r.path;
}
