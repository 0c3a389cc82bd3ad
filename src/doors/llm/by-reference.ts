// Tool output the model reads and the gate cannot: a file the model API stores, a URL it fetches
// (ADR 103), and inline media that is not text, an image or a PDF in base64 (ADR 114): the model
// API reads the page or the picture, the gate sees bytes no classify rule can read. The door
// raises the label as though every rule matched. Inline text (a text data: URL, a text/plain
// base64 document, text) is in the request and classified as it is.
import { isJsonObject, type JsonObject, type JsonValue } from '../../core/json.js';
import { isTextDataUrl, isTextType } from '../../flow/blob-text.js';
import { isString } from './format.js';

/** Whether a tool result's content (a string or a list of parts, in any format) holds what only the model reads. */
export function unreadByGate(content: JsonValue): boolean {
  const open: JsonValue[] = [content];
  while (open.length > 0) {
    const v = open.pop()!;
    if (Array.isArray(v)) open.push(...v);
    else if (isJsonObject(v)) {
      if (isReference(v) || isOpaqueInline(v)) return true;
      open.push(...Object.values(v));
    }
  }
  return false;
}

const INLINE = /^data:/i;

function isReference(part: JsonObject): boolean {
  // OpenAI: input_file and input_image (Responses), a file part (Chat Completions); Anthropic's container_upload.
  if (isString(part.file_id) || isString(part.file_url)) return true;
  // OpenAI image URLs: a string (Responses input_image) or { url } (Chat Completions image_url).
  const image = imageOf(part);
  if (isString(image) && !INLINE.test(image)) return true;
  // Anthropic image and document blocks: a source the API fetches or stores.
  return isJsonObject(part.source) && (part.source.type === 'url' || part.source.type === 'file');
}

function isOpaqueInline(part: JsonObject): boolean {
  // OpenAI file_data (input_file, a Chat Completions file part): a data: URL or bare base64, a PDF unless its type says text.
  if (isString(part.file_data) && !isTextDataUrl(part.file_data)) return true;
  // An image given inline is still an image.
  const image = imageOf(part);
  if (isString(image) && INLINE.test(image)) return true;
  // Anthropic image and document blocks in base64: text only when its media type says so.
  const source = part.source;
  return isJsonObject(source) && source.type === 'base64' && !(isString(source.media_type) && isTextType(source.media_type));
}

const imageOf = (part: JsonObject): JsonValue | undefined => (isJsonObject(part.image_url) ? part.image_url.url : part.image_url);
