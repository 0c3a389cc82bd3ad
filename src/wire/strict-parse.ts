// The strict JSON parser (RFC 8259) every host-to-upstream message goes through. It guards
// against the gap between what the gate reads and what the server reads: two readings of one
// key (`{"to":a,"To":b}`, exact duplicates), strings no other parser can represent (lone
// surrogates, raw control characters), numbers that change value on the way through a double
// (1e400, 9007199254740993, 1.0000000000000000001), and inputs built to exhaust the gate
// (1,000,000 `[`). Iterative, so nesting costs heap in a bounded stack, never call-stack depth.
// Why hand-written: docs/decisions/001-hand-written-strict-parser.md.
import type { JsonValue, JsonObject } from '../core/json.js';
import type { WireRefusal } from '../core/refusal.js';

export class WireError extends Error {
  constructor(
    readonly code: WireRefusal,
    readonly detail: string,
    /** Where in the text it was found (UTF-16 offset), when a parse found it. */
    public at?: number,
  ) {
    super(detail);
    this.name = 'WireError';
  }
}

export interface StrictParseOptions {
  maxDepth?: number; // default 64: arrays and objects together
}

export const DEFAULT_MAX_DEPTH = 64;

// ---------------------------------------------------------------------------------------------
// Keys: exact and case-folded duplicates.

const ASCII_ONLY = /^[\x00-\x7f]*$/;
const DEFAULT_IGNORABLE = /\p{Default_Ignorable_Code_Point}/gu;

/**
 * The identity under which two object keys collide: an approximation of Unicode's
 * NFKC_Casefold (the "identifier caseless match" of Unicode section 3.13), which JavaScript does
 * not expose. Default-ignorable code points are removed, then NFKC, full upper case, lower case,
 * NFKC, repeated to a fixpoint (at most four rounds) so that `ß`, `ẞ`, `SS` and `ss` all land on
 * `ss`, `ǅ`/`Ǆ`/`ǆ` on `ǆ`, the Kelvin sign on `k`, fullwidth `ｔｏ` on `to`. ASCII keys take
 * the exact shortcut `toLowerCase()`, which the full path also gives for them.
 */
export function foldKey(key: string): string {
  if (ASCII_ONLY.test(key)) return key.toLowerCase();
  let prev = key.replace(DEFAULT_IGNORABLE, '');
  for (let round = 0; round < 4; round++) {
    const next = prev.normalize('NFKC').toUpperCase().toLowerCase().normalize('NFKC').replace(DEFAULT_IGNORABLE, '');
    if (next === prev) return next;
    prev = next;
  }
  return prev;
}

// ---------------------------------------------------------------------------------------------
// Numbers: the decimal value of the text must equal the decimal value of the shortest
// ECMAScript serialization of the double it parses to.

const MAX_SAFE = Number.MAX_SAFE_INTEGER; // 2^53 - 1

/** A non-negative decimal `digits × 10^exp` with no leading or trailing zero in `digits`; zero is `''`. */
interface Decimal {
  digits: string;
  exp: number;
}

/**
 * Normalizes the unsigned parts of a number token. `expText` is the exponent's digits with its
 * sign applied separately. Returns null when the exponent is too large to represent exactly (the
 * value is then 0 or beyond any double, the caller decides which).
 */
function normalizeDecimal(intPart: string, fracPart: string, expNegative: boolean, expDigits: string): Decimal | null {
  let digits = intPart + fracPart;
  let lead = 0;
  while (lead < digits.length && digits.charCodeAt(lead) === 0x30) lead++;
  if (lead === digits.length) return { digits: '', exp: 0 };
  let end = digits.length;
  while (digits.charCodeAt(end - 1) === 0x30) end--;
  const trailing = digits.length - end;
  digits = digits.slice(lead, end);
  let e = 0;
  if (expDigits.length > 0) {
    let z = 0;
    while (z < expDigits.length - 1 && expDigits.charCodeAt(z) === 0x30) z++;
    const sig = expDigits.slice(z);
    if (sig.length > 15) return null; // |exponent| >= 10^15: far outside every double
    e = Number(sig);
    if (expNegative) e = -e;
  }
  return { digits, exp: e - fracPart.length + trailing };
}

/** The Decimal of a finite, non-zero, positive double's shortest serialization (String(v)). */
function decimalOfDouble(v: number): Decimal {
  const s = String(v); // forms: 123, 1.5, 0.001, 1e+21, 1.5e-7
  const ePos = s.indexOf('e');
  const mant = ePos < 0 ? s : s.slice(0, ePos);
  let expNeg = false;
  let expDigits = '';
  if (ePos >= 0) {
    const sign = s.charAt(ePos + 1);
    expNeg = sign === '-';
    expDigits = sign === '+' || sign === '-' ? s.slice(ePos + 2) : s.slice(ePos + 1);
  }
  const dot = mant.indexOf('.');
  const d = normalizeDecimal(dot < 0 ? mant : mant.slice(0, dot), dot < 0 ? '' : mant.slice(dot + 1), expNeg, expDigits);
  return d as Decimal; // String(v) never has a huge exponent
}

/**
 * Checks a number token already validated against the RFC 8259 grammar, given its parts, and
 * returns its value. Throws number_out_of_range as product.md section 1 defines it.
 */
function numberValue(token: string, intPart: string, fracPart: string, expNegative: boolean, expDigits: string): number {
  // Fast path: a plain integer of at most 15 digits is exact in a double and safe.
  if (fracPart.length === 0 && expDigits.length === 0 && intPart.length <= 15) return Number(token);
  const dec = normalizeDecimal(intPart, fracPart, expNegative, expDigits);
  if (dec !== null && dec.digits === '') return Number(token); // a zero, in any spelling: ±0
  if (dec === null) throw new WireError('number_out_of_range', 'number exponent out of range');
  const v = Number(token);
  if (!Number.isFinite(v)) throw new WireError('number_out_of_range', 'number is not finite as a double');
  if (v === 0) throw new WireError('number_out_of_range', 'number underflows to zero');
  const back = decimalOfDouble(Math.abs(v));
  if (back.digits !== dec.digits || back.exp !== dec.exp) {
    throw new WireError('number_out_of_range', 'number does not survive a round trip through a double');
  }
  if (Number.isInteger(v) && Math.abs(v) > MAX_SAFE) {
    throw new WireError('number_out_of_range', 'integer outside ±(2^53-1)');
  }
  return v;
}

// ---------------------------------------------------------------------------------------------
// The parser.

/**
 * A string of its own, sharing no memory with the message it was read from. V8 makes a slice of
 * 13 or more characters a view of its parent (a concatenation too): one member the gate keeps
 * (a call id, a tool name) would keep the whole message, arguments and results included, in
 * memory for as long (test/e2e/heap-canary.test.ts). Prepending one character and slicing it
 * off copies the characters into a new string; shorter strings are copies already.
 */
function detached(v: string): string {
  return v.length < 13 ? v : (' ' + v).slice(1);
}

const malformed = (what: string, at: number): WireError => new WireError('malformed_json', `${what} at offset ${at}`, at);

interface ArrayFrame {
  kind: 0;
  arr: JsonValue[];
}
interface ObjectFrame {
  kind: 1;
  obj: JsonObject;
  key: string;
  folded: Map<string, string>;
}
type Frame = ArrayFrame | ObjectFrame;

function setOwn(obj: JsonObject, key: string, value: JsonValue): void {
  // `obj.__proto__ = v` would call Object.prototype's setter and swap the prototype; every other
  // key is an own data property by plain assignment, as with JSON.parse.
  if (key === '__proto__') {
    Object.defineProperty(obj, key, { value, writable: true, enumerable: true, configurable: true });
  } else {
    obj[key] = value;
  }
}

const isWs = (c: number): boolean => c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;
const isDigit = (c: number): boolean => c >= 0x30 && c <= 0x39;

function hexValue(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  if (c >= 0x41 && c <= 0x46) return c - 0x37;
  if (c >= 0x61 && c <= 0x66) return c - 0x57;
  return -1;
}

class Parser {
  private i = 0;
  /**
   * The first duplicate_key or number_out_of_range met, held until the whole text has been read:
   * a text that is not JSON at all is malformed_json whatever it also contains (JSONTestSuite's
   * `[1.8011670033376514H-308]` is not a number out of range), so the code does not depend on
   * where in the line the syntax breaks. docs/decisions/010-jsontestsuite-conformance.md.
   */
  private deferred: WireError | null = null;
  constructor(
    private readonly s: string,
    private readonly maxDepth: number,
  ) {}

  parse(): JsonValue {
    const s = this.s;
    const stack: Frame[] = [];
    let value!: JsonValue;
    this.skipWs();
    // Each turn of the outer loop reads one value; containers push a frame and read their first
    // member on the next turn.
    for (;;) {
      const c = s.charCodeAt(this.i);
      let complete = true;
      if (c === 0x7b /* { */) {
        if (stack.length >= this.maxDepth) throw malformed(`nesting deeper than ${this.maxDepth}`, this.i);
        this.i++;
        this.skipWs();
        if (s.charCodeAt(this.i) === 0x7d) {
          this.i++;
          value = {};
        } else {
          const frame: ObjectFrame = { kind: 1, obj: {}, key: '', folded: new Map() };
          frame.key = this.readKey(frame);
          stack.push(frame);
          complete = false;
        }
      } else if (c === 0x5b /* [ */) {
        if (stack.length >= this.maxDepth) throw malformed(`nesting deeper than ${this.maxDepth}`, this.i);
        this.i++;
        this.skipWs();
        if (s.charCodeAt(this.i) === 0x5d) {
          this.i++;
          value = [];
        } else {
          stack.push({ kind: 0, arr: [] });
          complete = false;
        }
      } else {
        value = this.readScalar(c);
      }
      if (!complete) continue;

      // Hand the finished value to its container; close containers that end here.
      for (;;) {
        this.skipWs();
        const top = stack[stack.length - 1];
        if (top === undefined) {
          if (this.i !== s.length) throw malformed('trailing data after the value', this.i);
          if (this.deferred !== null) throw this.deferred;
          return value;
        }
        const d = s.charCodeAt(this.i);
        if (top.kind === 0) {
          top.arr.push(value);
          if (d === 0x2c /* , */) {
            this.i++;
            this.skipWs();
            break;
          }
          if (d === 0x5d /* ] */) {
            this.i++;
            stack.pop();
            value = top.arr;
            continue;
          }
          throw malformed("expected ',' or ']'", this.i);
        } else {
          setOwn(top.obj, top.key, value);
          if (d === 0x2c) {
            this.i++;
            this.skipWs();
            top.key = this.readKey(top);
            break;
          }
          if (d === 0x7d /* } */) {
            this.i++;
            stack.pop();
            value = top.obj;
            continue;
          }
          throw malformed("expected ',' or '}'", this.i);
        }
      }
    }
  }

  private skipWs(): void {
    const s = this.s;
    while (this.i < s.length && isWs(s.charCodeAt(this.i))) this.i++;
  }

  /** Reads `"key"` `:` and leaves the cursor on the member's value. */
  private readKey(frame: ObjectFrame): string {
    if (this.s.charCodeAt(this.i) !== 0x22) throw malformed('expected a string key', this.i);
    const at = this.i;
    const key = this.readString();
    const folded = foldKey(key);
    const seen = frame.folded.get(folded);
    if (seen !== undefined) {
      this.deferred ??= new WireError(
        'duplicate_key',
        seen === key ? 'the same key appears twice in one object' : 'two keys in one object are equal under case folding',
        at,
      );
    } else {
      frame.folded.set(folded, key);
    }
    this.skipWs();
    if (this.s.charCodeAt(this.i) !== 0x3a) throw malformed("expected ':'", this.i);
    this.i++;
    this.skipWs();
    return key;
  }

  private readScalar(c: number): JsonValue {
    const s = this.s;
    if (c === 0x22) return this.readString();
    if (c === 0x2d || isDigit(c)) return this.readNumber();
    if (s.startsWith('true', this.i)) {
      this.i += 4;
      return true;
    }
    if (s.startsWith('false', this.i)) {
      this.i += 5;
      return false;
    }
    if (s.startsWith('null', this.i)) {
      this.i += 4;
      return null;
    }
    if (this.i >= s.length) throw malformed('unexpected end of input', this.i);
    throw malformed('unexpected character', this.i);
  }

  private readNumber(): number {
    const s = this.s;
    const start = this.i;
    let i = this.i;
    if (s.charCodeAt(i) === 0x2d) i++;
    const intStart = i;
    const first = s.charCodeAt(i);
    if (first === 0x30) {
      i++;
    } else if (isDigit(first) /* 1-9 */) {
      while (isDigit(s.charCodeAt(i))) i++;
    } else {
      throw malformed('a number needs a digit', i);
    }
    const intPart = s.slice(intStart, i);
    let fracPart = '';
    if (s.charCodeAt(i) === 0x2e /* . */) {
      i++;
      const fs = i;
      while (isDigit(s.charCodeAt(i))) i++;
      if (i === fs) throw malformed('a fraction needs a digit', i);
      fracPart = s.slice(fs, i);
    }
    let expNegative = false;
    let expDigits = '';
    const e = s.charCodeAt(i);
    if (e === 0x65 || e === 0x45) {
      i++;
      const sign = s.charCodeAt(i);
      if (sign === 0x2b || sign === 0x2d) {
        expNegative = sign === 0x2d;
        i++;
      }
      const es = i;
      while (isDigit(s.charCodeAt(i))) i++;
      if (i === es) throw malformed('an exponent needs a digit', i);
      expDigits = s.slice(es, i);
    }
    // A digit right after a leading 0 ("01") is no JSON number.
    if (isDigit(s.charCodeAt(i))) throw malformed('leading zero in a number', i);
    this.i = i;
    try {
      return numberValue(s.slice(start, i), intPart, fracPart, expNegative, expDigits);
    } catch (e) {
      if (!(e instanceof WireError)) throw e;
      e.at = start;
      this.deferred ??= e;
      return 0; // never seen: the deferred refusal is thrown once the text is read
    }
  }

  private readString(): string {
    const s = this.s;
    let i = this.i + 1; // past the opening quote
    let out = '';
    let runStart = i;
    for (;;) {
      if (i >= s.length) throw malformed('unterminated string', i);
      const c = s.charCodeAt(i);
      if (c === 0x22) {
        out += s.slice(runStart, i);
        this.i = i + 1;
        return detached(out);
      }
      if (c < 0x20) throw malformed('control character in a string', i);
      if (c >= 0xd800 && c <= 0xdfff) {
        // Raw surrogates (only possible when the caller hands a JS string): pairs only.
        const next = s.charCodeAt(i + 1);
        if (c <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
          i += 2;
          continue;
        }
        throw malformed('lone surrogate in a string', i);
      }
      if (c !== 0x5c) {
        i++;
        continue;
      }
      out += s.slice(runStart, i);
      const esc = s.charCodeAt(i + 1);
      switch (esc) {
        case 0x22: out += '"'; i += 2; break;
        case 0x5c: out += '\\'; i += 2; break;
        case 0x2f: out += '/'; i += 2; break;
        case 0x62: out += '\b'; i += 2; break;
        case 0x66: out += '\f'; i += 2; break;
        case 0x6e: out += '\n'; i += 2; break;
        case 0x72: out += '\r'; i += 2; break;
        case 0x74: out += '\t'; i += 2; break;
        case 0x75: {
          const u = this.hex4(i + 2);
          if (u >= 0xdc00 && u <= 0xdfff) throw malformed('lone low surrogate escape', i);
          if (u >= 0xd800 && u <= 0xdbff) {
            // A high surrogate must be followed at once by an escaped low surrogate.
            if (s.charCodeAt(i + 6) !== 0x5c || s.charCodeAt(i + 7) !== 0x75) {
              throw malformed('lone high surrogate escape', i);
            }
            const lo = this.hex4(i + 8);
            if (lo < 0xdc00 || lo > 0xdfff) throw malformed('lone high surrogate escape', i);
            out += String.fromCharCode(u, lo);
            i += 12;
          } else {
            out += String.fromCharCode(u);
            i += 6;
          }
          break;
        }
        default:
          throw malformed('invalid escape in a string', i);
      }
      runStart = i;
    }
  }

  private hex4(at: number): number {
    const s = this.s;
    let v = 0;
    for (let k = 0; k < 4; k++) {
      const h = hexValue(s.charCodeAt(at + k));
      if (h < 0) throw malformed('invalid \\u escape', at + k);
      v = (v << 4) | h;
    }
    return v;
  }
}

/**
 * Parses one JSON text under the rules of product.md section 1, or throws WireError with
 * `malformed_json`, `duplicate_key` or `number_out_of_range`. Never uses JSON.parse; never
 * recurses; objects are ordinary objects whose keys (including `__proto__`) are own data
 * properties, as JSON.parse makes them.
 */
export function parseStrict(text: string, opts: StrictParseOptions = {}): JsonValue {
  const maxDepth = opts.maxDepth ?? DEFAULT_MAX_DEPTH;
  if (typeof text !== 'string') throw new WireError('malformed_json', 'input is not text');
  return new Parser(text, maxDepth).parse();
}
