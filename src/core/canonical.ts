// RFC 8785 (JSON Canonicalization Scheme). Every digest, signature and forwarded message uses
// this form, so two parties that agree on a value agree on its bytes.
// Keys sort by UTF-16 code units (JS default sort); numbers use ECMAScript's shortest
// round-trip form, which is what RFC 8785 section 3.2.2.3 specifies.
import type { JsonValue } from './json.js';

export function canonicalize(value: unknown): string {
  if (value === null) return 'null';
  switch (typeof value) {
    case 'boolean':
      return value ? 'true' : 'false';
    case 'number':
      if (!Number.isFinite(value)) throw new TypeError('canonical JSON: non-finite number');
      return Object.is(value, -0) ? '0' : JSON.stringify(value);
    case 'string':
      return JSON.stringify(value);
    case 'object': {
      if (Array.isArray(value)) return '[' + value.map((v) => canonicalize(v)).join(',') + ']';
      const obj = value as Record<string, unknown>;
      const keys = Object.keys(obj).filter((k) => obj[k] !== undefined).sort();
      return '{' + keys.map((k) => JSON.stringify(k) + ':' + canonicalize(obj[k])).join(',') + '}';
    }
    default:
      throw new TypeError(`canonical JSON: unsupported ${typeof value}`);
  }
}

export function canonicalBytes(value: JsonValue | unknown): Buffer {
  return Buffer.from(canonicalize(value), 'utf8');
}
