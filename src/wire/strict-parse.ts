// PLACEHOLDER until the strict parser lands (see the wire helper's work): same interface.
import type { JsonValue } from './json.js';
import type { WireRefusal } from '../gate/refusal.js';

export class WireError extends Error {
  constructor(readonly code: WireRefusal, readonly detail: string) {
    super(detail);
  }
}

export interface StrictParseOptions {
  maxDepth?: number; // default 64
}

export function parseStrict(text: string, _opts: StrictParseOptions = {}): JsonValue {
  try {
    return JSON.parse(text) as JsonValue;
  } catch {
    throw new WireError('malformed_json', 'not valid JSON');
  }
}
