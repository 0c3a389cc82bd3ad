// Signed checkpoint (transparency-dev signed note): the log's signed statement of its tree size
// and root. Guards against an inclusion proof into a tree the log never published: the proof's
// root and size must be the ones the log key signed.
// Note: "<origin>\n<size>\n<base64 root>\n[extension lines]\n" + "\n" + one or more
// "— <name> <base64(keyhint(4) || signature)>\n". The key hint is the first 4 bytes of SHA-256 of
// the log key's SPKI DER (the first 4 bytes of the logID), as in Rekor and sigstore-js. The
// signer name must be the origin's first word ("rekor.sigstore.dev" for
// "rekor.sigstore.dev - 2605736670972794746").
import type { KeyObject } from 'node:crypto';
import { fail } from '../errors.js';
import { strictBase64 } from '../encoding.js';
import { logIdOf, verifyLogSignature } from './log-key.js';

export type Checkpoint = { origin: string; size: number; root: Buffer; extensions: string[]; signed: Buffer };
type NoteSignature = { name: string; keyHint: Buffer; signature: Buffer };

const SIG_LINE = /^\u2014 (\S+) (\S+)$/;

export function parseCheckpoint(text: string): { checkpoint: Checkpoint; signatures: NoteSignature[] } {
  const bad = (why: string): never => fail('checkpoint_invalid', `checkpoint: ${why}`);
  const sep = text.indexOf('\n\n');
  if (sep < 0) bad('no blank line between note and signatures');
  const note = text.slice(0, sep + 1);
  const sigPart = text.slice(sep + 2);
  if (!sigPart.endsWith('\n')) bad('signature lines must end with a newline');
  const signatures = sigPart
    .slice(0, -1)
    .split('\n')
    .map((line) => {
      const m = SIG_LINE.exec(line);
      if (!m) return bad('malformed signature line');
      const bytes = strictBase64(m[2], 'checkpoint signature');
      if (bytes.length < 5) bad('signature too short');
      return { name: m[1], keyHint: bytes.subarray(0, 4), signature: bytes.subarray(4) };
    });
  const lines = note.slice(0, -1).split('\n');
  if (lines.length < 3) bad('too few lines');
  const [origin, sizeText, rootText, ...extensions] = lines;
  if (origin.length === 0) bad('empty origin');
  if (!/^(0|[1-9][0-9]{0,15})$/.test(sizeText) || !Number.isSafeInteger(Number(sizeText))) bad('tree size is not a decimal integer');
  const root = strictBase64(rootText, 'checkpoint root');
  if (root.length !== 32) bad('root hash is not 32 bytes');
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u0009\u000b-\u001f]/.test(note)) bad('control character in note');
  return { checkpoint: { origin, size: Number(sizeText), root, extensions, signed: Buffer.from(note, 'utf8') }, signatures };
}

/**
 * Verifies the checkpoint's signature by the log key and that it vouches for (size, root).
 * Signatures by other keys (witnesses) are ignored; at least one must be the log's, and every
 * signature carrying the log's key hint and name must verify.
 */
export function verifyCheckpoint(text: string, key: KeyObject, expected: { size: number; root: Buffer }): Checkpoint {
  const { checkpoint, signatures } = parseCheckpoint(text);
  const hint = logIdOf(key).subarray(0, 4);
  const name = checkpoint.origin.split(' ')[0];
  const ours = signatures.filter((s) => s.keyHint.equals(hint) && s.name === name);
  if (ours.length === 0) fail('checkpoint_invalid', 'checkpoint carries no signature by the log key');
  for (const s of ours) {
    if (!verifyLogSignature(key, checkpoint.signed, s.signature)) fail('checkpoint_invalid', 'checkpoint signature does not verify with the log key');
  }
  if (checkpoint.size !== expected.size) fail('checkpoint_invalid', 'checkpoint tree size differs from the inclusion proof');
  if (!checkpoint.root.equals(expected.root)) fail('checkpoint_invalid', 'checkpoint root differs from the inclusion proof');
  return checkpoint;
}

/** Signs a checkpoint note (used by the in-repo test log): returns the whole signed note. */
export function formatCheckpoint(origin: string, size: number, root: Uint8Array, extensions: string[] = []): string {
  return [origin, String(size), Buffer.from(root).toString('base64'), ...extensions].join('\n') + '\n';
}
