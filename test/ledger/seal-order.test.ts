// An entry is sealed from a copy whose members are put in RFC 8785 order first, so that
// canonicalize writes it natively (docs/performance.md, 2026-12-05). The bytes signed and stored
// must be those of the entry whatever order its members came in and whatever they are named:
// differential against canonicalize over the same members built another way, for member names
// that V8 orders on its own ("10" before "9"), "__proto__", non-ASCII names, undefined values.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createPrivateKey, generateKeyPairSync, verify } from 'node:crypto';
import fc from 'fast-check';
import { canonicalize } from '../../src/core/canonical.js';
import { sealOne, sealRun } from '../../src/ledger/seal.js';
import { FileSigner } from '../../src/keys/file.js';
import type { EntryBody } from '../../src/ledger/entry.js';

const key = new FileSigner(createPrivateKey(generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' })));
const sign = (m: Buffer) => key.sign(m);

/** The members as own data properties, in the given order, none through an assignment. */
function own(members: [string, unknown][]): Record<string, unknown> {
  const o: Record<string, unknown> = {};
  for (const [k, v] of members) Object.defineProperty(o, k, { value: v, enumerable: true, writable: true, configurable: true });
  return o;
}

const name = fc.oneof(
  fc.constantFrom('kind', 'tool', 'seq', 'ts', 'prev', 'v', '__proto__', 'constructor', 'toJSON', '0', '9', '10', '01', '4294967295', 'é', '\u{1F600}', 'Z', 'a b', ''),
  fc.string({ maxLength: 6 }),
);
const value = fc.oneof(fc.string({ maxLength: 8 }), fc.integer(), fc.boolean(), fc.constant(null), fc.constant(undefined), fc.array(fc.integer(), { maxLength: 3 }), fc.dictionary(fc.string({ maxLength: 3 }), fc.integer(), { maxKeys: 3 }));

test('property: sealing signs and stores the canonical bytes of the entry, whatever its members are named and in whatever order they come', () => {
  fc.assert(
    fc.property(fc.uniqueArray(fc.tuple(name.filter((k) => k !== 'sig'), value), { selector: ([k]) => k, maxLength: 12 }), fc.string({ maxLength: 70 }), (members, prev) => {
      const body = own(members) as unknown as EntryBody;
      const expected = canonicalize(own([...members.filter(([k]) => k !== 'prev'), ['prev', prev]]));
      const [sealed] = sealRun(prev, [body], sign);
      const ahead = sealOne(prev, body, sign);
      assert.equal(ahead.signed, expected);
      assert.ok(verify(null, Buffer.from(expected, 'utf8'), key.publicKey, Buffer.from(sealed.sig, 'base64')), 'the signature covers the canonical bytes');
      const stored = JSON.parse(sealed.stored) as Record<string, unknown>;
      assert.equal(sealed.stored, canonicalize(own(Object.entries(stored))), 'stored canonically');
      assert.equal(stored.sig, sealed.sig);
      assert.equal(canonicalize(own(Object.entries(stored).filter(([k]) => k !== 'sig'))), expected, 'stored: the signed bytes and the signature');
      assert.deepEqual(ahead.sealed, sealed, 'sealed ahead or in a run, the same seal');
    }),
    { numRuns: 400 },
  );
});
