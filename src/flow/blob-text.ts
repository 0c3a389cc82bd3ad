// An MCP resource's `blob` (base64, in a resources/read answer or a result's embedded resource)
// whose mimeType says text: the host decodes it and the model reads the text, so classify rules
// read that text, not its base64. Any other blob (an image, a PDF) is not text a rule can read.
const TEXTUAL = /^(text\/|application\/(json|xml|yaml|x-yaml|javascript|ecmascript|csv|sql|x-sh|x-ndjson)\b|[^;]*\+(json|xml|yaml)\b)/i;

/** The text of `o.blob` when `o` is a text resource (mimeType textual or absent), else null. */
export function blobText(o: { [key: string]: unknown }): string | null {
  const blob = o.blob;
  if (typeof blob !== 'string') return null;
  const type = o.mimeType;
  if (type !== undefined && !(typeof type === 'string' && TEXTUAL.test(type))) return null;
  return Buffer.from(blob, 'base64').toString('utf8');
}
