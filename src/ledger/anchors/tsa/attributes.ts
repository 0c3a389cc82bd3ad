// Signed-attribute access: RFC 5652 requires contentType and messageDigest exactly once with one
// value; a duplicated attribute could let a verifier and a signer read different values.
import type * as asn1js from 'asn1js';
import type * as pkijs from 'pkijs';
import { fail } from '../errors.js';

export function signedAttr(si: pkijs.SignerInfo, type: string, required: boolean): asn1js.AsnType | undefined {
  const found = (si.signedAttrs?.attributes ?? []).filter((a) => a.type === type);
  if (found.length > 1) fail('malformed', `signed attribute ${type} appears more than once`);
  if (found.length === 0) {
    if (required) fail('malformed', `signed attribute ${type} is missing`);
    return undefined;
  }
  if (found[0].values.length !== 1) fail('malformed', `signed attribute ${type} must have one value`);
  return found[0].values[0];
}
