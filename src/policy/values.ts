// JSON values from the task and the arguments, turned into Cedar's JSON value form. Guards
// against the one place where data could become code: Cedar reads an object with a key
// `__entity` as an entity reference and `__extn` as an extension value, so an argument like
// {"__entity": {"type": "Agent", "id": "admin"}} could make `context.args.x == Agent::"admin"`
// true. No object with a `__…` key is ever handed to Cedar: conversion throws (fail_closed).
// Values are converted to the type the schema declares for them (a task attribute as typed
// from the start-up task context, an argument as its manifest rule says), else by kind:
// integers Long, other numbers decimal (Cedar's only fractional type: four fractional digits);
// a value Cedar cannot hold exactly, or of another kind than declared, throws.
// Messages name the path, never the value.
import type { JsonObject, JsonValue } from '../core/json.js';
import { isReservedKey, type CedarType } from './schema.js';

export type CedarValue = boolean | number | string | CedarValue[] | { [key: string]: CedarValue };

export class ValueConversionError extends Error {
  /** Why, without the path: fixed text, never a value or a key. */
  readonly reason: string;
  constructor(message: string, reason: string) {
    super(message);
    this.reason = reason;
  }
}

function fail(where: string, reason: string): ValueConversionError {
  return new ValueConversionError(`${where}: ${reason}`, reason);
}

const DECIMAL_MAX = 922337203685477; // integer part of Cedar decimal's i64 / 10^4 range, conservatively

/** Cedar decimal text for a JS number, or throws when it is not exactly representable. */
export function decimalText(n: number, where: string): string {
  if (!Number.isFinite(n)) throw fail(where, `not a finite number`);
  if (Math.abs(n) > DECIMAL_MAX) throw fail(where, `number outside Cedar decimal range`);
  if (Number.isInteger(n)) return `${Object.is(n, -0) ? 0 : n}.0`;
  const s = String(n);
  const m = /^(-?\d+)\.(\d{1,4})$/.exec(s);
  if (!m) throw fail(where, `number has more than 4 decimal places (Cedar decimal)`);
  return s;
}

function decimal(n: number, where: string): CedarValue {
  return { __extn: { fn: 'decimal', arg: decimalText(n, where) } } as unknown as CedarValue;
}

function kindOf(v: JsonValue): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number';
  return typeof v;
}

function typeName(t: CedarType): string {
  return t.type === 'Extension' ? t.name : t.type === 'Set' ? `Set<${typeName(t.element)}>` : t.type;
}

/** Convert a value to the Cedar type the schema declares for it, or, where it declares none,
 *  by its JSON kind. A value of another kind than declared throws: Cedar compares values of
 *  different types as unequal without an error, so a `forbid when { context.task.tier == "basic" }`
 *  would silently stop applying if `tier` arrived as a number. */
export function toCedar(value: JsonValue, where: string, type?: CedarType): CedarValue {
  if (value === null) throw fail(where, `null has no Cedar value`);
  if (type) {
    const mismatch = () => fail(where, `expected ${typeName(type)} as the schema declares, found ${kindOf(value)}`);
    switch (type.type) {
      case 'String':
        if (typeof value !== 'string') throw mismatch();
        return value;
      case 'Boolean':
        if (typeof value !== 'boolean') throw mismatch();
        return value;
      case 'Long':
        if (typeof value !== 'number' || !Number.isInteger(value)) throw mismatch();
        if (!Number.isSafeInteger(value)) throw fail(where, `integer outside the exact range`);
        return value;
      case 'Extension':
        if (typeof value !== 'number') throw mismatch();
        return decimal(value, where);
      case 'Set':
        if (!Array.isArray(value)) throw mismatch();
        return value.map((v, i) => toCedar(v, `${where}[${i}]`, type.element));
      case 'Record':
        if (typeof value !== 'object' || Array.isArray(value)) throw mismatch();
        return recordToCedar(value, where, type.attributes);
    }
  }
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return value;
    case 'number':
      if (!Number.isInteger(value)) return decimal(value, where);
      if (!Number.isSafeInteger(value)) throw fail(where, `integer outside the exact range`);
      return value;
    default:
      break;
  }
  if (Array.isArray(value)) return value.map((v, i) => toCedar(v, `${where}[${i}]`));
  return recordToCedar(value as JsonObject, where);
}

/** A record; attributes whose value is null are left out (absent, as `has` sees it). */
export function recordToCedar(obj: JsonObject, where: string, attributes?: Record<string, CedarType>): { [key: string]: CedarValue } {
  const out: { [key: string]: CedarValue } = {};
  for (const key of Object.keys(obj)) {
    if (isReservedKey(key)) throw fail(where, `key beginning with "__" is reserved by Cedar's JSON format`);
    const v = obj[key];
    if (v === null) continue;
    const t = attributes && Object.prototype.hasOwnProperty.call(attributes, key) ? attributes[key] : undefined;
    out[key] = toCedar(v, `${where}.${key}`, t);
  }
  return out;
}
