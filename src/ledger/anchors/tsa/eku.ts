// RFC 3161 section 2.3: the TSA's certificate must have exactly one extended key usage,
// id-kp-timeStamping, marked critical. Guards against timestamps signed with an ordinary
// signing or TLS certificate that happens to chain to the same root.
import { oid, parseDer, expect, T } from '../der.js';
import { fail } from '../errors.js';
import { cert } from './certs.js';
import { OID } from './oids.js';

export function verifyTimeStampingEku(certDer: Buffer): void {
  const ekus = cert(certDer).extensions.filter((e) => e.oid === OID.extKeyUsage);
  if (ekus.length !== 1) fail('tsa_eku_missing', 'signing certificate has no (single) extended key usage extension');
  if (!ekus[0].critical) fail('tsa_eku_missing', 'extended key usage is not critical');
  const purposes = expect(parseDer(ekus[0].value), T.SEQUENCE, 'extKeyUsage').children.map((p) => oid(p, 'key purpose'));
  if (purposes.length !== 1 || purposes[0] !== OID.timeStamping) fail('tsa_eku_missing', 'extended key usage is not exactly timeStamping');
}
