// One typed union of reasons an anchor fails, so callers (anchor verify, ledger verify) switch on
// a code instead of parsing messages. Details are one line and never carry payload values.
export type AnchorErrorCode =
  | 'malformed' // the entry or token cannot be parsed, or is not in canonical form
  | 'key_invalid' // the log key or TSA chain given to us is unusable
  | 'log_id_mismatch' // logID is not SHA-256 of the log key's SPKI
  | 'set_invalid' // the signed entry timestamp does not verify with the log key
  | 'inclusion_invalid' // the inclusion proof does not lead to the stated root
  | 'checkpoint_invalid' // the signed checkpoint is unsigned by the log key or disagrees with the proof
  | 'body_mismatch' // the entry body does not commit to the expected digest
  | 'body_signature_invalid' // the hashedrekord signature does not verify with its key (or not the expected key)
  | 'tsa_status' // a TimeStampResp whose status is not granted
  | 'tsa_signature_invalid' // CMS signature or messageDigest attribute wrong
  | 'tsa_chain_invalid' // the signing certificate does not chain to the given root at genTime
  | 'tsa_eku_missing' // the signing certificate lacks a critical timeStamping extended key usage
  | 'tsa_ess_mismatch' // ESSCertID(v2) does not name the signing certificate
  | 'imprint_mismatch' // TSTInfo messageImprint is not the expected digest
  | 'nonce_mismatch' // TSTInfo nonce is not the nonce sent
  | 'gentime_before' // genTime is before the lower bound it must not precede
  | 'unavailable'; // (clients only) the TSA or log could not be reached or answered an HTTP error

export class AnchorError extends Error {
  readonly code: AnchorErrorCode;
  constructor(code: AnchorErrorCode, detail: string) {
    super(detail);
    this.name = 'AnchorError';
    this.code = code;
  }
}

export function fail(code: AnchorErrorCode, detail: string): never {
  throw new AnchorError(code, detail);
}
