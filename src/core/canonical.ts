// RFC 8785 (JSON Canonicalization Scheme). Every digest, signature and forwarded message uses
// this form, so two parties that agree on a value agree on its bytes.
// Keys sort by UTF-16 code units (JS default sort); numbers use ECMAScript's shortest
// round-trip form, which is what RFC 8785 section 3.2.2.3 specifies.
// It runs several times per call (forwarded message, digests, every ledger entry) and once per
// entry in verify, so: a value whose objects already list their keys in sorted order (anything
// parsed from a canonical line) is written by the native JSON.stringify, which then produces
// exactly these bytes; anything else by loops that append to one string.
import type { JsonValue } from './json.js';

export function canonicalize(value: unknown): string {
  return inCanonicalOrder(value) ? JSON.stringify(value) : write(value);
}

/**
 * Whether JSON.stringify writes `value` canonically: plain objects whose keys are already in
 * sorted order, finite numbers, no undefined array element. -0 is fine (JSON.stringify writes 0).
 */
function inCanonicalOrder(value: unknown): boolean {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return true;
    case 'number':
      return Number.isFinite(value);
    case 'object': {
      if (value === null) return true;
      if (Array.isArray(value)) {
        for (let i = 0; i < value.length; i++) if (value[i] === undefined || !inCanonicalOrder(value[i])) return false;
        return true;
      }
      const proto = Object.getPrototypeOf(value);
      if (proto !== Object.prototype && proto !== null) return false;
      const obj = value as Record<string, unknown>;
      const keys = Object.keys(obj);
      for (let i = 0; i < keys.length; i++) {
        if (i > 0 && !(keys[i - 1] < keys[i])) return false;
        const v = obj[keys[i]];
        if (v !== undefined && !inCanonicalOrder(v)) return false;
      }
      return true;
    }
    default:
      return false;
  }
}

function write(value: unknown): string {
  switch (typeof value) {
    case 'string':
      return JSON.stringify(value);
    case 'number':
      if (!Number.isFinite(value)) throw new TypeError('canonical JSON: non-finite number');
      return Object.is(value, -0) ? '0' : JSON.stringify(value);
    case 'boolean':
      return value ? 'true' : 'false';
    case 'object': {
      if (value === null) return 'null';
      if (Array.isArray(value)) {
        let s = '[';
        for (let i = 0; i < value.length; i++) s += (i === 0 ? '' : ',') + write(value[i]);
        return s + ']';
      }
      const obj = value as Record<string, unknown>;
      const keys = Object.keys(obj).sort();
      let s = '{';
      let first = true;
      for (const k of keys) {
        const v = obj[k];
        if (v === undefined) continue;
        s += (first ? '' : ',') + JSON.stringify(k) + ':' + write(v);
        first = false;
      }
      return s + '}';
    }
    default:
      throw new TypeError(`canonical JSON: unsupported ${typeof value}`);
  }
}

export function canonicalBytes(value: JsonValue | unknown): Buffer {
  return Buffer.from(canonicalize(value), 'utf8');
}
