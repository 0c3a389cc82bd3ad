// Parsed certificates, cached by their exact DER: verifying a long ledger meets the same few TSA
// certificates again and again. Pure memoisation: a hit is for byte-identical input, so it never
// changes an outcome. Fields come from our strict DER reader; pkijs is built only for path
// validation, and node:crypto's X509Certificate gives keys and names.
import { createHash, X509Certificate } from 'node:crypto';
import * as pkijs from 'pkijs';
import { expect, oid, parseDer, T, type Der } from '../der.js';
import { fail } from '../errors.js';

export type Extension = { oid: string; critical: boolean; value: Buffer };

export type Cert = {
  der: Buffer;
  digest: string; // SHA-256 of the DER (base64): the identity used for de-duplication
  tbs: Buffer;
  issuer: Buffer; // DER of the issuer Name
  serial: Buffer; // INTEGER content octets
  extensions: Extension[];
  x509: X509Certificate;
  pkijs(): pkijs.Certificate;
};

const cache = new Map<string, Cert>();
const MAX = 256;

function parseExtensions(n: Der | undefined): Extension[] {
  if (!n) return [];
  const seq = expect(n.children[0], T.SEQUENCE, 'extensions');
  if (n.children.length !== 1) fail('malformed', 'certificate: bad extensions');
  return seq.children.map((e) => {
    const s = expect(e, T.SEQUENCE, 'extension');
    const critical = s.children.length === 3 ? expect(s.children[1], T.BOOLEAN, 'extension critical').content[0] === 0xff : false;
    if (s.children.length === 3 && !critical) fail('malformed', 'extension: DEFAULT FALSE encoded');
    const value = expect(s.children[s.children.length - 1], T.OCTET_STRING, 'extension value').content;
    if (s.children.length < 2 || s.children.length > 3) fail('malformed', 'extension: bad structure');
    return { oid: oid(s.children[0], 'extension id'), critical, value };
  });
}

export function cert(der: Buffer): Cert {
  const k = createHash('sha256').update(der).digest('base64');
  const hit = cache.get(k);
  if (hit) return hit;
  const root = expect(parseDer(der), T.SEQUENCE, 'certificate');
  if (root.children.length !== 3) fail('malformed', 'certificate: bad structure');
  const tbs = expect(root.children[0], T.SEQUENCE, 'tbsCertificate');
  let i = tbs.children[0]?.tag === 0xa0 ? 1 : 0;
  const serial = expect(tbs.children[i++], T.INTEGER, 'serial').content;
  i++; // signature algorithm
  const issuer = expect(tbs.children[i++], T.SEQUENCE, 'issuer').bytes;
  const extNode = tbs.children.find((c) => c.tag === 0xa3);
  let x509: X509Certificate;
  try {
    x509 = new X509Certificate(der);
  } catch {
    fail('malformed', 'certificate: unreadable');
  }
  let p: pkijs.Certificate | undefined;
  const c: Cert = {
    der,
    digest: k,
    tbs: tbs.bytes,
    issuer,
    serial,
    extensions: parseExtensions(extNode),
    x509,
    pkijs: () => (p ??= pkijs.Certificate.fromBER(new Uint8Array(der))),
  };
  if (cache.size >= MAX) cache.delete(cache.keys().next().value!);
  cache.set(k, c);
  return c;
}

/**
 * A certificate's subject for reports. An empty subject is legal (RFC 5280 section 4.1.2.6: the
 * name is then in a critical subjectAltName), and node:crypto gives `undefined` for it; such a
 * certificate is named by its subjectAltName, else by its SHA-256 fingerprint.
 */
export function subjectOf(c: Cert): string {
  const s = c.x509.subject;
  if (s) return s.replace(/\n/g, ', ');
  const alt = c.x509.subjectAltName;
  if (alt) return `(empty subject; ${alt})`;
  return `(empty subject; sha256 ${Buffer.from(c.digest, 'base64').toString('hex')})`;
}
