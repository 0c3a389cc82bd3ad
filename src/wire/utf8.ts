// Bytes to text for one line. Guards against text that means different things to different
// decoders: invalid or overlong UTF-8, encoded surrogates, and a byte-order mark that one reader
// strips and another keeps as part of the first key. All of them refuse as malformed_json.
import { WireError } from './strict-parse.js';

// fatal: invalid sequences throw instead of turning into U+FFFD. ignoreBOM: false would strip a
// leading BOM silently, so the BOM is refused explicitly before decoding.
const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });

/** Decodes a complete line as UTF-8, or throws WireError('malformed_json'). */
export function decodeUtf8(bytes: Uint8Array): string {
  if (bytes.length >= 3 && bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) {
    throw new WireError('malformed_json', 'byte-order mark at the start of the line');
  }
  try {
    return decoder.decode(bytes);
  } catch {
    throw new WireError('malformed_json', 'invalid UTF-8');
  }
}
