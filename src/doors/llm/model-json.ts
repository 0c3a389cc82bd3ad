// What the model API sent, read as JSON the door can rely on. Strict, as every message the gate
// reads; and with no `__proto__` member anywhere: the SDKs merge the members of streamed
// chunks into their snapshot (Object.assign), where that one replaces the prototype, so a
// `{"__proto__": {"tool_calls": [...]}}` delta gives the agent calls no member of the chunk holds.
import { isJsonObject, type JsonValue } from '../../core/json.js';
import { parseStrict } from '../../wire/strict-parse.js';
import { Unreadable } from './format.js';

export function readModelJson(text: string, what: string): JsonValue {
  let v: JsonValue;
  try {
    v = parseStrict(text);
  } catch {
    throw new Unreadable(`${what} is not JSON`);
  }
  const open: JsonValue[] = [v];
  while (open.length > 0) {
    const x = open.pop()!;
    if (Array.isArray(x)) open.push(...x);
    else if (isJsonObject(x)) {
      if (Object.hasOwn(x, '__proto__')) throw new Unreadable(`${what} has a __proto__ member`);
      open.push(...Object.values(x));
    }
  }
  return v;
}
