// Text sent as base64 that its reader decodes: an MCP resource's `blob` (a resources/read answer,
// a result's embedded resource) whose mimeType says text, which the host decodes, and a base64
// data: URL of a text type (OpenAI `file_data` in a tool result), which the model API decodes.
// The model reads the text, so classify rules read that text, not its base64. Any other media
// (an image, a PDF) is not text a rule can read.
const TEXTUAL = /^(text\/|application\/(json|xml|yaml|x-yaml|javascript|ecmascript|csv|sql|x-sh|x-ndjson)\b|[^;,]*\+(json|xml|yaml)\b)/i;

/** The text of `o.blob` when `o` is a text resource (mimeType textual or absent), else null. */
export function blobText(o: { [key: string]: unknown }): string | null {
  const blob = o.blob;
  if (typeof blob !== 'string') return null;
  const type = o.mimeType;
  if (type !== undefined && !(typeof type === 'string' && TEXTUAL.test(type))) return null;
  return decode(blob);
}

const DATA_URL = /^data:([^,]*);base64,/i;

/** The text of a base64 data: URL of a textual media type, else null. */
export function dataUrlText(s: string): string | null {
  if (!s.startsWith('data:') && !s.startsWith('DATA:')) return null; // the common case: no match attempted
  const m = DATA_URL.exec(s);
  return m !== null && TEXTUAL.test(m[1]) ? decode(s.slice(m[0].length)) : null;
}

const decode = (base64: string): string => Buffer.from(base64, 'base64').toString('utf8');
