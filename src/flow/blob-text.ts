// Text sent as base64 that its reader decodes: an MCP resource's `blob` (a resources/read answer,
// a result's embedded resource) whose mimeType says text, which the host decodes, and a base64
// data: URL of a text type (OpenAI `file_data` in a tool result) or an Anthropic base64 document
// source of a text type, which the model API decodes.
// The model reads the text, so classify rules read that text, not its base64. Any other media
// (an image, a PDF) is not text a rule can read.
const TEXTUAL = /^(text\/|application\/(json|xml|yaml|x-yaml|javascript|ecmascript|csv|sql|x-sh|x-ndjson)\b|[^;,]*\+(json|xml|yaml)\b)/i;

/**
 * The text of base64 a reader decodes as text, else null: `o.blob` of an MCP resource (mimeType
 * textual or absent), or `o.data` of an Anthropic base64 source (`{type: 'base64', media_type,
 * data}`, a document block's: the model API decodes a text/plain one and the model reads it).
 */
export function blobText(o: { [key: string]: unknown }): string | null {
  const [base64, type] = typeof o.blob === 'string' ? [o.blob, o.mimeType] : o.type === 'base64' && typeof o.data === 'string' ? [o.data, o.media_type] : [null, null];
  if (base64 === null) return null;
  if (type !== undefined && !(typeof type === 'string' && TEXTUAL.test(type))) return null;
  return decode(base64);
}

const DATA_URL = /^data:([^,]*);base64,/i;
/** RFC 2397: a media type left out (parameters aside) is text/plain. */
const PLAIN = /^(;|$)/;

/** The text of a base64 data: URL of a textual media type, else null. The scheme is read in any
 *  case (RFC 2397, RFC 3986 3.1): `Data:` and `DATA:` are data: URLs to the model API too. */
export function dataUrlText(s: string): string | null {
  const c = s.charCodeAt(0);
  if (c !== 0x64 && c !== 0x44) return null; // the common case: one character, no match attempted
  const m = DATA_URL.exec(s);
  return m !== null && (PLAIN.test(m[1]) || TEXTUAL.test(m[1])) ? decode(s.slice(m[0].length)) : null;
}

const decode = (base64: string): string => Buffer.from(base64, 'base64').toString('utf8');
