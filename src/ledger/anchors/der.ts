// A strict DER reader (X.690 section 10): definite minimal lengths, single-byte tags, no trailing
// bytes, constructed bit as the universal type demands. A value has one encoding, so a changed
// byte is a changed value or a refusal, never a re-spelling the signature does not see.
// Fast by design: verifying a ledger reads thousands of tokens.
import { fail } from './errors.js';

export type Der = {
  tag: number; // the identifier octet
  constructed: boolean;
  cls: number; // 0 universal, 1 application, 2 context, 3 private
  num: number; // tag number (< 31)
  bytes: Buffer; // the whole TLV
  content: Buffer;
  children: Der[]; // parsed when constructed
};

export const T = {
  BOOLEAN: 0x01,
  INTEGER: 0x02,
  BIT_STRING: 0x03,
  OCTET_STRING: 0x04,
  NULL: 0x05,
  OID: 0x06,
  UTF8: 0x0c,
  SEQUENCE: 0x30,
  SET: 0x31,
  UTC_TIME: 0x17,
  GENERALIZED_TIME: 0x18,
} as const;

function readOne(buf: Buffer, pos: number, depth: number): { node: Der; next: number } {
  if (depth > 32) fail('malformed', 'DER: nesting too deep');
  if (pos + 2 > buf.length) fail('malformed', 'DER: truncated');
  const tag = buf[pos];
  if ((tag & 0x1f) === 0x1f) fail('malformed', 'DER: multi-byte tag');
  let len = buf[pos + 1];
  let hdr = 2;
  if (len & 0x80) {
    const n = len & 0x7f;
    if (n === 0) fail('malformed', 'DER: indefinite length');
    if (n > 4 || pos + 2 + n > buf.length) fail('malformed', 'DER: bad length');
    len = 0;
    for (let i = 0; i < n; i++) len = len * 256 + buf[pos + 2 + i];
    if (buf[pos + 2] === 0 || len < 128) fail('malformed', 'DER: non-minimal length');
    hdr += n;
  }
  const end = pos + hdr + len;
  if (end > buf.length) fail('malformed', 'DER: length beyond input');
  const constructed = (tag & 0x20) !== 0;
  const cls = tag >> 6;
  const num = tag & 0x1f;
  if (cls === 0) {
    const mustBeConstructed = num === 0x10 || num === 0x11;
    if (constructed !== mustBeConstructed) fail('malformed', 'DER: wrong constructed bit');
  }
  const content = buf.subarray(pos + hdr, end);
  const node: Der = { tag, constructed, cls, num, bytes: buf.subarray(pos, end), content, children: [] };
  if (constructed) {
    let p = 0;
    while (p < content.length) {
      const r = readOne(content, p, depth + 1);
      node.children.push(r.node);
      p = r.next;
    }
  } else if (cls === 0) {
    checkPrimitive(node);
  }
  return { node, next: end };
}

function checkPrimitive(n: Der): void {
  const c = n.content;
  switch (n.tag) {
    case T.BOOLEAN:
      if (c.length !== 1 || (c[0] !== 0 && c[0] !== 0xff)) fail('malformed', 'DER: bad BOOLEAN');
      break;
    case T.INTEGER:
      if (c.length === 0 || (c.length > 1 && ((c[0] === 0 && !(c[1] & 0x80)) || (c[0] === 0xff && c[1] & 0x80)))) {
        fail('malformed', 'DER: non-minimal INTEGER');
      }
      break;
    case T.NULL:
      if (c.length !== 0) fail('malformed', 'DER: bad NULL');
      break;
    case T.OID:
      if (c.length === 0 || c[c.length - 1] & 0x80) fail('malformed', 'DER: bad OID');
      for (let i = 0; i < c.length; i++) if (c[i] === 0x80 && (i === 0 || !(c[i - 1] & 0x80))) fail('malformed', 'DER: non-minimal OID');
      break;
    case T.BIT_STRING:
      if (c.length === 0 || c[0] > 7 || (c.length === 1 && c[0] !== 0)) fail('malformed', 'DER: bad BIT STRING');
      break;
  }
}

/** Parses exactly one DER value spanning all of `buf`. */
export function parseDer(buf: Uint8Array): Der {
  const b = Buffer.isBuffer(buf) ? buf : Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength);
  const { node, next } = readOne(b, 0, 0);
  if (next !== b.length) fail('malformed', 'DER: trailing bytes');
  return node;
}

export function expect(n: Der | undefined, tag: number, what: string): Der {
  if (!n || n.tag !== tag) fail('malformed', `${what}: unexpected structure`);
  return n;
}

export function oid(n: Der | undefined, what: string): string {
  const c = expect(n, T.OID, what).content;
  const parts: number[] = [];
  let v = 0;
  for (const b of c) {
    v = v * 128 + (b & 0x7f);
    if (!(b & 0x80)) {
      parts.push(v);
      v = 0;
    }
  }
  const first = parts[0] < 40 ? 0 : parts[0] < 80 ? 1 : 2;
  return [first, parts[0] - first * 40, ...parts.slice(1)].join('.');
}

export function integer(n: Der | undefined, what: string): bigint {
  const c = expect(n, T.INTEGER, what).content;
  let v = BigInt('0x' + c.toString('hex'));
  if (c[0] & 0x80) v -= 1n << BigInt(c.length * 8);
  return v;
}

/** GeneralizedTime in DER form: YYYYMMDDHHMMSS[.f*]Z, no trailing zero in the fraction. */
export function generalizedTime(n: Der | undefined, what: string): Date {
  const s = expect(n, T.GENERALIZED_TIME, what).content.toString('latin1');
  const m = /^(\d{4})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})(?:\.(\d*[1-9]))?Z$/.exec(s);
  if (!m) fail('malformed', `${what}: not a DER GeneralizedTime`);
  const ms = m[7] ? Number((m[7] + '00').slice(0, 3)) : 0;
  const d = new Date(Date.UTC(+m[1], +m[2] - 1, +m[3], +m[4], +m[5], +m[6], ms));
  if (d.getUTCMonth() !== +m[2] - 1 || d.getUTCDate() !== +m[3] || +m[4] > 23 || +m[5] > 59 || +m[6] > 59) {
    fail('malformed', `${what}: invalid date`);
  }
  return d;
}

/** An AlgorithmIdentifier: OID and the raw parameters (undefined when absent). */
export function algorithm(n: Der | undefined, what: string): { oid: string; params?: Der; bytes: Buffer } {
  const s = expect(n, T.SEQUENCE, what);
  if (s.children.length < 1 || s.children.length > 2) fail('malformed', `${what}: bad AlgorithmIdentifier`);
  return { oid: oid(s.children[0], what), params: s.children[1], bytes: s.bytes };
}

// Writers, for the few structures we build (an RFC 3161 request).
function lengthOctets(n: number): Buffer {
  if (n < 128) return Buffer.from([n]);
  const out: number[] = [];
  while (n > 0) {
    out.unshift(n & 0xff);
    n = Math.floor(n / 256);
  }
  return Buffer.from([0x80 | out.length, ...out]);
}

export function encodeTlv(tag: number, ...content: Uint8Array[]): Buffer {
  const body = Buffer.concat(content);
  return Buffer.concat([Buffer.from([tag]), lengthOctets(body.length), body]);
}

export function encodeInteger(v: bigint): Buffer {
  if (v < 0n) throw new RangeError('encodeInteger: negative');
  let hex = v.toString(16);
  if (hex.length % 2) hex = '0' + hex;
  let b = Buffer.from(hex, 'hex');
  if (b[0] & 0x80) b = Buffer.concat([Buffer.from([0]), b]);
  return encodeTlv(T.INTEGER, b);
}

export function encodeOid(dotted: string): Buffer {
  const parts = dotted.split('.').map((p) => BigInt(p));
  const arcs = [parts[0] * 40n + parts[1], ...parts.slice(2)];
  const out: number[] = [];
  for (const arc of arcs) {
    const bytes: number[] = [Number(arc & 0x7fn)];
    let v = arc >> 7n;
    while (v > 0n) {
      bytes.unshift(Number(v & 0x7fn) | 0x80);
      v >>= 7n;
    }
    out.push(...bytes);
  }
  return encodeTlv(T.OID, Buffer.from(out));
}
