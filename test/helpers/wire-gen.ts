// What the wire's property tests (test/wire/properties.test.ts) and its seeded fuzzer
// (test/wire/fuzz.test.ts) share: byte mutations of a valid message, and an oracle for numbers
// that decides without the parser under test.
import fc from 'fast-check';

export type ByteMutation = { op: 'flip' | 'insert' | 'delete' | 'truncate' | 'replace' | 'duplicate'; pos: number; len: number; byte: number };

/** One change to a message's bytes: a bit flipped, a byte inserted, replaced or deleted, a span repeated, the tail cut. */
export const byteMutation: fc.Arbitrary<ByteMutation> = fc.record({
  op: fc.constantFrom('flip', 'insert', 'delete', 'truncate', 'replace', 'duplicate'),
  pos: fc.nat(),
  len: fc.integer({ min: 1, max: 16 }),
  byte: fc.oneof(fc.integer({ min: 0, max: 255 }), fc.constantFrom(...Buffer.from('{}[]",:\\u0eE-.+ \r\t\n')), fc.constantFrom(0x80, 0xc0, 0xed, 0xef, 0xff)),
});

export function mutateBytes(buf: Buffer, muts: ByteMutation[]): Buffer {
  let b = Buffer.from(buf);
  for (const m of muts) {
    const p = b.length === 0 ? 0 : m.pos % b.length;
    if (m.op === 'flip' && b.length) b[p] = b[p]! ^ (1 << m.byte % 8);
    else if (m.op === 'replace' && b.length) b[p] = m.byte;
    else if (m.op === 'insert') b = Buffer.concat([b.subarray(0, p), Buffer.from([m.byte]), b.subarray(p)]);
    else if (m.op === 'delete' && b.length) b = Buffer.concat([b.subarray(0, p), b.subarray(p + m.len)]);
    else if (m.op === 'truncate') b = b.subarray(0, p);
    else if (m.op === 'duplicate') b = Buffer.concat([b.subarray(0, p + m.len), b.subarray(p)]); // repeats a span: keys, values, brackets
  }
  return b;
}

/** Exact decimal equality of two number tokens, with BigInt: the round-trip rule's oracle. */
export function exactEqual(a: string, b: string): boolean {
  const parts = (t: string): [bigint, number] => {
    const m = /^-?(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/.exec(t)!;
    const frac = m[2] ?? '';
    return [BigInt(m[1]! + frac), Number(m[3] ?? '0') - frac.length];
  };
  const [ma, ea] = parts(a);
  const [mb, eb] = parts(b);
  const e = Math.min(ea, eb);
  return ma * 10n ** BigInt(ea - e) === mb * 10n ** BigInt(eb - e);
}
