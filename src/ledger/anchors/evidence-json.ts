// Evidence files (a Rekor entry, its body, a stored anchor line) are read with the project's
// strict JSON parser, never JSON.parse: JSON.parse keeps the last of two equal keys, so a file
// with a forged first `logIndex` or `canonicalizedBody` would be read as the genuine one and
// accepted while another reader sees the forgery. One text, one reading, or a refusal.
import type { JsonValue } from '../../core/json.js';
import { parseStrict, WireError } from '../../wire/strict-parse.js';
import { fail } from './errors.js';

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

export function readEvidenceJson(input: string | Uint8Array, what: string): JsonValue {
  let text: string;
  try {
    text = typeof input === 'string' ? input : utf8.decode(input);
  } catch {
    fail('malformed', `${what}: not UTF-8`);
  }
  try {
    return parseStrict(text);
  } catch (e) {
    if (e instanceof WireError) fail('malformed', `${what}: not strict JSON (${e.code})`);
    throw e;
  }
}
