// Text sent encoded that its reader decodes: an MCP resource's `blob` (a resources/read answer,
// a result's embedded resource) whose mimeType says text, which the host decodes, and a data:
// URL of a text type (OpenAI `file_data` in a tool result; base64 or, RFC 2397's default,
// percent-encoded) or an Anthropic base64 document source of a text type, which the model API
// decodes. The model reads the text, so classify rules read that text, not its encoding: as
// UTF-8 and, when the type names another charset, in that one too (a UTF-16 text read as UTF-8
// splits every marker with NULs; a reader that ignores the charset reads UTF-8).
// Any other media (an image, a PDF) is not text a rule can read.

// Text by its type: every text/ and message/ type (a mail is text: message/rfc822), the
// application/ types that are text (JSON Lines, TOML, PEM, ...), a +json/+xml/+yaml suffix, and
// any type that names a charset (RFC 2046: only text has one).
const TEXTUAL =
  /^\s*(?:text\/|message\/|application\/(?:json|jsonl|ndjson|x-ndjson|jsonlines|x-jsonlines|json-seq|xml|yaml|x-yaml|yml|x-yml|toml|x-toml|javascript|x-javascript|ecmascript|typescript|csv|sql|graphql|x-sh|x-shellscript|x-pem-file|pem-certificate-chain|pgp-keys|pgp-signature|mbox|rtf|x-tex|x-latex|x-www-form-urlencoded)\b|[^;,]*\+(?:json|xml|yaml|toml)\b|[^,]*;\s*charset\s*=)/i;
const CHARSET = /;\s*charset\s*=\s*"?([^";,\s]+)/i;

/**
 * The readings of base64 a reader decodes as text, else none: `o.blob` of an MCP resource (mimeType
 * textual or absent), or `o.data` of an Anthropic base64 source (`{type: 'base64', media_type,
 * data}`, a document block's: the model API decodes a text/plain one and the model reads it).
 */
export function blobTexts(o: { [key: string]: unknown }): string[] {
  const [base64, type] = typeof o.blob === 'string' ? [o.blob, o.mimeType] : o.type === 'base64' && typeof o.data === 'string' ? [o.data, o.media_type] : [null, null];
  if (base64 === null) return NONE;
  if (type !== undefined && !(typeof type === 'string' && TEXTUAL.test(type))) return NONE;
  return texts(Buffer.from(base64, 'base64'), typeof type === 'string' ? type : '');
}

const NONE: string[] = [];

/** Whether a media type names text (a reader decodes it and reads the text). */
export const isTextType = (type: string): boolean => TEXTUAL.test(type);

/** Whether `s` is a data: URL of text (a media type left out is text/plain). */
export function isTextDataUrl(s: string): boolean {
  const m = DATA_URL.exec(s);
  return m !== null && (PLAIN.test(m[1]) || TEXTUAL.test(m[1]));
}

const DATA_URL = /^data:([^,]*?)(;base64)?,/i;
/** RFC 2397: a media type left out (parameters aside) is text/plain. */
const PLAIN = /^(;|$)/;

/** The readings of a data: URL of a textual media type, base64 or percent-encoded, else none
 *  (also when it holds no escape: its text is then the string itself). The scheme is read in any case
 *  (RFC 2397, RFC 3986 3.1): `Data:` and `DATA:` are data: URLs to the model API too. */
export function dataUrlTexts(s: string): string[] {
  const c = s.charCodeAt(0);
  if (c !== 0x64 && c !== 0x44) return NONE; // the common case: one character, no match attempted
  if (!isTextDataUrl(s)) return NONE;
  const m = DATA_URL.exec(s)!;
  const data = s.slice(m[0].length);
  // Base64 in a URL may have its + / = percent-escaped: unescaped first, as a URL reader does.
  if (m[2] !== undefined) return texts(Buffer.from(data.includes('%') ? percentDecoded(data).toString('latin1') : data, 'base64'), m[1]);
  return data.includes('%') ? texts(percentDecoded(data), m[1]) : NONE;
}

const ESCAPE = /%[0-9a-f]{2}/i;
/** A string with percent-escapes (a URL's query, a path) as its reader reads it, else null. */
export function unescapedText(s: string): string | null {
  return s.includes('%') && ESCAPE.test(s) ? percentDecoded(s).toString('utf8') : null;
}

/** The bytes a URL's percent-encoding stands for (RFC 3986 2.1); a `%` not followed by two hex digits is itself. */
function percentDecoded(s: string): Buffer {
  const bytes = Buffer.from(s, 'utf8');
  const out = Buffer.allocUnsafe(bytes.length);
  let n = 0;
  for (let i = 0; i < bytes.length; i++) {
    const hi = bytes[i] === 0x25 && i + 2 < bytes.length ? hex(bytes[i + 1]) : -1;
    const lo = hi >= 0 ? hex(bytes[i + 2]) : -1;
    if (lo >= 0) {
      out[n++] = hi * 16 + lo;
      i += 2;
    } else out[n++] = bytes[i];
  }
  return out.subarray(0, n);
}

function hex(b: number): number {
  if (b >= 0x30 && b <= 0x39) return b - 0x30;
  const l = b | 0x20;
  return l >= 0x61 && l <= 0x66 ? l - 0x61 + 10 : -1;
}

/** Bytes as UTF-8 text, and as text in the charset `type` names when that reads otherwise. */
function texts(bytes: Buffer, type: string): string[] {
  const utf8 = bytes.toString('utf8');
  const charset = CHARSET.exec(type)?.[1];
  if (charset === undefined) return [utf8];
  let named: string;
  try {
    named = new TextDecoder(charset).decode(bytes);
  } catch {
    return [utf8]; // not a charset this runtime reads
  }
  return named === utf8 ? [utf8] : [utf8, named];
}
