// What the host is offered of a server's tools/list (product.md 7a). Guards against a model
// being offered tools it can never call: only the tools the manifest declares pass, the rest of
// the answer (nextCursor, _meta) is kept as it came.
import { isJsonObject, type JsonValue } from '../core/json.js';

export function filterToolList(result: JsonValue, declared: (tool: string) => boolean): JsonValue {
  if (!isJsonObject(result) || !Array.isArray(result.tools)) return result;
  const tools = result.tools.filter((t) => isJsonObject(t) && typeof t.name === 'string' && declared(t.name));
  return { ...result, tools };
}
