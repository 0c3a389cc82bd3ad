// Tool output handed to the model by reference: a file the model API stores, a URL it fetches.
// The model reads that content and the gate never does, so no classify rule can read it: the
// door raises the label as though every rule matched (ADR 103). Inline data (a data: URL,
// base64, text) is in the request and classified as it is.
import { isJsonObject, type JsonObject, type JsonValue } from '../../core/json.js';
import { isString } from './format.js';

/** Whether a tool result's content (a string or a list of parts, in any format) holds a reference. */
export function byReference(content: JsonValue): boolean {
  const open: JsonValue[] = [content];
  while (open.length > 0) {
    const v = open.pop()!;
    if (Array.isArray(v)) open.push(...v);
    else if (isJsonObject(v)) {
      if (isReference(v)) return true;
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
  const image = isJsonObject(part.image_url) ? part.image_url.url : part.image_url;
  if (isString(image) && !INLINE.test(image)) return true;
  // Anthropic image and document blocks: a source the API fetches or stores.
  return isJsonObject(part.source) && (part.source.type === 'url' || part.source.type === 'file');
}
