// JSON values from the task and the arguments, turned into Cedar's JSON value form. Guards
// against the one place where data could become code: Cedar reads an object with a key
// `__entity` as an entity reference and `__extn` as an extension value, so an argument like
// {"__entity": {"type": "Agent", "id": "admin"}} could make `context.args.x == Agent::"admin"`
// true. No object with a `__…` key is ever handed to Cedar: conversion throws (fail_closed).
// Numbers: integers are Long; numbers declared `number` and non-integers are decimal (Cedar's
// only fractional type: four fractional digits); a value Cedar cannot hold exactly throws.
// Messages name the path, never the value.
import type { ArgumentRule } from '../contract/manifest-types.js';
import type { JsonObject, JsonValue } from '../wire/json.js';
import { isReservedKey } from './schema.js';

export type CedarValue = boolean | number | string | CedarValue[] | { [key: string]: CedarValue };

export class ValueConversionError extends Error {}

const DECIMAL_MAX = 922337203685477; // integer part of Cedar decimal's i64 / 10^4 range, conservatively

/** Cedar decimal text for a JS number, or throws when it is not exactly representable. */
export function decimalText(n: number, where: string): string {
  if (!Number.isFinite(n)) throw new ValueConversionError(`${where}: not a finite number`);
  if (Math.abs(n) > DECIMAL_MAX) throw new ValueConversionError(`${where}: number outside Cedar decimal range`);
  if (Number.isInteger(n)) return `${Object.is(n, -0) ? 0 : n}.0`;
  const s = String(n);
  const m = /^(-?\d+)\.(\d{1,4})$/.exec(s);
  if (!m) throw new ValueConversionError(`${where}: number has more than 4 decimal places (Cedar decimal)`);
  return s;
}

function decimal(n: number, where: string): CedarValue {
  return { __extn: { fn: 'decimal', arg: decimalText(n, where) } } as unknown as CedarValue;
}

/** Convert a value by its JSON kind, or by `rule` where the manifest fixes its type. */
export function toCedar(value: JsonValue, where: string, rule?: ArgumentRule): CedarValue {
  if (value === null) throw new ValueConversionError(`${where}: null has no Cedar value`);
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return value;
    case 'number':
      if (rule?.type === 'number' || !Number.isInteger(value)) return decimal(value, where);
      if (!Number.isSafeInteger(value)) throw new ValueConversionError(`${where}: integer outside the exact range`);
      return value;
    default:
      break;
  }
  if (Array.isArray(value)) {
    return value.map((v, i) => toCedar(v, `${where}[${i}]`, rule?.type === 'array' ? rule.items : undefined));
  }
  return recordToCedar(value as JsonObject, where);
}

/** A record; attributes whose value is null are left out (absent, as `has` sees it). */
export function recordToCedar(obj: JsonObject, where: string, rules?: Record<string, ArgumentRule>): { [key: string]: CedarValue } {
  const out: { [key: string]: CedarValue } = {};
  for (const key of Object.keys(obj)) {
    if (isReservedKey(key)) throw new ValueConversionError(`${where}: key beginning with "__" is reserved by Cedar's JSON format`);
    const v = obj[key];
    if (v === null) continue;
    // Own data property only: define, so a key like "__proto__" cannot reach the prototype.
    Object.defineProperty(out, key, {
      value: toCedar(v, `${where}.${key}`, rules ? Object.prototype.hasOwnProperty.call(rules, key) ? rules[key] : undefined : undefined),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return out;
}
