// Signed checkpoint (C2SP signed note, c2sp.org/tlog-checkpoint): the log's signed statement of
// its tree size and root. Guards against an inclusion proof into a tree the log never published:
// the proof's root and size must be the ones the log key signed.
// Note: "<origin>\n<size>\n<base64 root>\n[extension lines]\n" + "\n" + one or more
// "— <name> <base64(keyID(4) || signature)>\n". Which (name, key ID) is the log's depends on the
// log's generation (see log-key.ts): Rekor v1 signs as the origin's first word
// ("rekor.sigstore.dev" for "rekor.sigstore.dev - 2605736670972794746") with the first 4 bytes of
// SHA-256(SPKI); a Rekor v2 (tlog-tiles) log signs as its origin with the C2SP key ID.
// Bounded on unsigned input: at most MAX_NOTE_SIGNATURES lines, no (name, key ID) twice, and the
// one line of the known key is the only signature verified.
import type { KeyObject } from 'node:crypto';
import { fail } from '../errors.js';
import { strictBase64 } from '../encoding.js';
import { verifyLogSignature } from './log-key.js';

export type Checkpoint = { origin: string; size: number; root: Buffer; extensions: string[]; signed: Buffer };
type NoteSignature = { name: string; keyHint: Buffer; signature: Buffer };

const SIG_LINE = /^\u2014 (\S+) (\S+)$/;

/** C2SP signed-note requires accepting at least 16 signatures; witnesses rarely number more. */
export const MAX_NOTE_SIGNATURES = 64;

export function parseCheckpoint(text: string): { checkpoint: Checkpoint; signatures: NoteSignature[] } {
  const bad = (why: string): never => fail('checkpoint_invalid', `checkpoint: ${why}`);
  const sep = text.indexOf('\n\n');
  if (sep < 0) bad('no blank line between note and signatures');
  const note = text.slice(0, sep + 1);
  const sigPart = text.slice(sep + 2);
  if (!sigPart.endsWith('\n')) bad('signature lines must end with a newline');
  const lines = sigPart.slice(0, -1).split('\n', MAX_NOTE_SIGNATURES + 1);
  if (lines.length > MAX_NOTE_SIGNATURES) bad(`more than ${MAX_NOTE_SIGNATURES} signature lines`);
  const seen = new Set<string>();
  const signatures = lines.map((line) => {
    const m = SIG_LINE.exec(line);
    if (!m) return bad('malformed signature line');
    const bytes = strictBase64(m[2], 'checkpoint signature');
    if (bytes.length < 5) bad('signature too short');
    const id = `${m[1]} ${bytes.subarray(0, 4).toString('hex')}`;
    if (seen.has(id)) bad('a key signs more than once');
    seen.add(id);
    return { name: m[1], keyHint: bytes.subarray(0, 4), signature: bytes.subarray(4) };
  });
  const noteLines = note.slice(0, -1).split('\n');
  if (noteLines.length < 3) bad('too few lines');
  const [origin, sizeText, rootText, ...extensions] = noteLines;
  if (origin.length === 0) bad('empty origin');
  if (!/^(0|[1-9][0-9]{0,15})$/.test(sizeText) || !Number.isSafeInteger(Number(sizeText))) bad('tree size is not a decimal integer');
  const root = strictBase64(rootText, 'checkpoint root');
  if (root.length !== 32) bad('root hash is not 32 bytes');
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u0009\u000b-\u001f]/.test(note)) bad('control character in note');
  return { checkpoint: { origin, size: Number(sizeText), root, extensions, signed: Buffer.from(note, 'utf8') }, signatures };
}

/** The (name, key ID) under which the log signs a checkpoint with this origin. */
export type LogSigner = (origin: string) => { name: string; keyId: Buffer };

/**
 * Verifies the checkpoint's signature by the log key and that it vouches for (size, root).
 * Signatures by other keys (witnesses) are ignored; exactly one line must be the log's (its name
 * and key ID), and it must verify.
 */
export function verifyCheckpoint(text: string, key: KeyObject, signer: LogSigner, expected: { size: number; root: Buffer }): Checkpoint {
  const { checkpoint, signatures } = parseCheckpoint(text);
  const { name, keyId } = signer(checkpoint.origin);
  const hint = keyId.subarray(0, 4);
  const ours = signatures.find((s) => s.keyHint.equals(hint) && s.name === name);
  if (!ours) fail('checkpoint_invalid', 'checkpoint carries no signature by the log key');
  if (!verifyLogSignature(key, checkpoint.signed, ours.signature)) fail('checkpoint_invalid', 'checkpoint signature does not verify with the log key');
  if (checkpoint.size !== expected.size) fail('checkpoint_invalid', 'checkpoint tree size differs from the inclusion proof');
  if (!checkpoint.root.equals(expected.root)) fail('checkpoint_invalid', 'checkpoint root differs from the inclusion proof');
  return checkpoint;
}

/** The note text of a checkpoint (used by the in-repo test logs, which sign it). */
export function formatCheckpoint(origin: string, size: number, root: Uint8Array, extensions: string[] = []): string {
  return [origin, String(size), Buffer.from(root).toString('base64'), ...extensions].join('\n') + '\n';
}
