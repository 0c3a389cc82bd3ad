// RFC 3161 section 2.3: the TSA's certificate must have exactly one extended key usage,
// id-kp-timeStamping, marked critical. Guards against timestamps signed with an ordinary
// signing or TLS certificate that happens to chain to the same root.
import * as pkijs from 'pkijs';
import { fail } from '../errors.js';
import { OID } from './oids.js';

export function verifyTimeStampingEku(certDer: Buffer): void {
  const cert = pkijs.Certificate.fromBER(new Uint8Array(certDer));
  const ekus = (cert.extensions ?? []).filter((e) => e.extnID === OID.extKeyUsage);
  if (ekus.length !== 1) fail('tsa_eku_missing', 'signing certificate has no (single) extended key usage extension');
  const eku = ekus[0];
  if (!eku.critical) fail('tsa_eku_missing', 'extended key usage is not critical');
  const purposes = (eku.parsedValue as pkijs.ExtKeyUsage | undefined)?.keyPurposes ?? [];
  if (purposes.length !== 1 || purposes[0] !== OID.timeStamping) fail('tsa_eku_missing', 'extended key usage is not exactly timeStamping');
}
