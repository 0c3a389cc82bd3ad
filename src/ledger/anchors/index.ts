// The anchors' public surface: offline verification (used by `anchor verify` and `verify`) and
// the two clients the gate uses to obtain anchors for an epoch root.
export { AnchorError, type AnchorErrorCode } from './errors.js';
export { parseDigest, formatDigest, type DigestSpec } from './encoding.js';
export { verifyRekorEntry, type RekorSummary, type RekorVerifyOptions } from './rekor/verify.js';
export { parseRekorEntry, type RekorEntryFile } from './rekor/entry.js';
export { submitToRekor, hashedRekordFor, type RekorSubmitResult } from './rekor/client.js';
export { ed25519Seed, signEd25519ph, verifyEd25519ph, verifyEd25519phDigest } from './rekor/ed25519ph.js';
export { verifyTsaToken, type TsaSummary, type TsaVerifyOptions } from './tsa/verify.js';
export { requestTimestamp, buildTimeStampReq, randomNonce, type TimestampResult } from './tsa/client.js';
