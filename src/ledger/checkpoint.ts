// The auditor's checkpoint (product.md section 7). Deleting the newest entries leaves no trace in
// what remains: the rest still chains and verifies. An auditor who keeps a checkpoint, a signed
// statement of the ledger's size and RFC 6962 root over every entry, can tell: a ledger that no
// longer holds every entry the checkpoint covers, unchanged, fails `verify --checkpoint`.
// Format: a C2SP signed note (c2sp.org/signed-note) whose text is a C2SP checkpoint
// (c2sp.org/tlog-checkpoint): "<origin>\n<size>\n<base64 root>\n", a blank line, then
// "— <name> <base64(key id(4) || Ed25519 signature)>\n" by the gate key, where the key id is the
// first 4 bytes of SHA-256(name || 0x0A || 0x01 || the 32-byte public key). Leaf i is the
// 32-byte hash of entry i, as in epochs, so a checkpoint's root is an epoch root over [0, size).
import { createHash, verify, type KeyObject } from 'node:crypto';
import { keyIdOf, type Signer } from '../core/signer.js';

export interface TreeHead {
  size: number;
  root: string; // sha256:HEX
}

export class CheckpointError extends Error {
  constructor(detail: string) {
    super(detail);
    this.name = 'CheckpointError';
  }
}

const MAX_NOTE = 64 * 1024;
const MAX_SIGNATURES = 64;
const SIG_LINE = /^\u2014 ([^\s+]+) ([A-Za-z0-9+/]+={0,2})$/;

/** The note's origin and signer name: one per gate key. */
export function checkpointOrigin(publicKey: KeyObject): string {
  return 'cloakpipe.ledger/' + keyIdOf(publicKey).slice(7, 23);
}

function rawEd25519(publicKey: KeyObject): Buffer {
  const jwk = publicKey.export({ format: 'jwk' });
  if (jwk.crv !== 'Ed25519' || typeof jwk.x !== 'string') throw new CheckpointError('the gate key is not Ed25519');
  return Buffer.from(jwk.x, 'base64url');
}

/** The C2SP signed-note key id of an Ed25519 key under `name`. */
export function noteKeyId(name: string, publicKey: KeyObject): Buffer {
  return createHash('sha256').update(name).update(Buffer.from([0x0a, 0x01])).update(rawEd25519(publicKey)).digest().subarray(0, 4);
}

function noteText(origin: string, head: TreeHead): string {
  return `${origin}\n${head.size}\n${Buffer.from(head.root.slice(7), 'hex').toString('base64')}\n`;
}

export function signCheckpoint(head: TreeHead, signer: Signer): string {
  const origin = checkpointOrigin(signer.publicKey);
  const text = noteText(origin, head);
  const sig = signer.sign(Buffer.from(text, 'utf8'));
  return `${text}\n\u2014 ${origin} ${Buffer.concat([noteKeyId(origin, signer.publicKey), sig]).toString('base64')}\n`;
}

/**
 * Reads a checkpoint signed by `publicKey`: exactly one signature line by that key (other
 * signers, such as an auditor's cosignature, are allowed and ignored), and a text that is exactly
 * the checkpoint form for this key's origin. Throws CheckpointError.
 */
export function readCheckpoint(note: string, publicKey: KeyObject): TreeHead {
  if (note.length > MAX_NOTE) throw new CheckpointError('checkpoint is too large');
  const sep = note.indexOf('\n\n');
  if (sep < 0 || !note.endsWith('\n')) throw new CheckpointError('not a signed note (no blank line before the signatures)');
  const text = note.slice(0, sep + 1);
  const lines = note.slice(sep + 2, -1).split('\n');
  if (lines.length > MAX_SIGNATURES) throw new CheckpointError('too many signature lines');
  const origin = checkpointOrigin(publicKey);
  const id = noteKeyId(origin, publicKey);
  let sig: Buffer | null = null;
  for (const line of lines) {
    const m = SIG_LINE.exec(line);
    if (!m) throw new CheckpointError('malformed signature line');
    const bytes = Buffer.from(m[2], 'base64');
    if (bytes.toString('base64') !== m[2] || bytes.length < 5) throw new CheckpointError('malformed signature line');
    if (m[1] !== origin || !bytes.subarray(0, 4).equals(id)) continue;
    if (sig) throw new CheckpointError('two signatures by the gate key');
    sig = bytes.subarray(4);
  }
  if (!sig) throw new CheckpointError('no signature by this gate key (another ledger, or another key)');
  if (!verify(null, Buffer.from(text, 'utf8'), publicKey, sig)) throw new CheckpointError('the signature does not verify with the gate key');
  const m = /^([^\n]+)\n(0|[1-9][0-9]{0,15})\n([A-Za-z0-9+/]{43}=)\n$/.exec(text);
  if (!m || m[1] !== origin || !Number.isSafeInteger(Number(m[2]))) throw new CheckpointError('the signed text is not a ledger checkpoint');
  const root = Buffer.from(m[3], 'base64');
  if (root.toString('base64') !== m[3]) throw new CheckpointError('the root is not canonical base64');
  return { size: Number(m[2]), root: 'sha256:' + root.toString('hex') };
}
