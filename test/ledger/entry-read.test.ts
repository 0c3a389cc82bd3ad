// readEntryLine (verify's fast reader: JSON.parse when that gives the same answer) against
// parseStoredEntry (the strict reader): differential, over real signed entries mutated at
// random and over the spellings where JSON.parse and the strict reader part ways. Likewise the
// signed bytes cut from the line (unsignedForm) against canonicalizing the entry without its
// sig, and the signature decoder against Buffer.from.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { canonicalize } from '../../src/core/canonical.js';
import { EntryFormatError, parseStoredEntry, signEntry } from '../../src/ledger/entry.js';
import { checkEntryLine, readEntryLine, signatureBytes, unsignedForm } from '../../src/ledger/verify/check-entry.js';
import { randomBytes } from 'node:crypto';
import { gateKey } from './epoch-fixture.js';

const key = gateKey();
const line = canonicalize(
  signEntry({ v: 1, seq: 7, ts: '2026-11-30T10:00:00.000Z', prev: 'sha256:' + '0'.repeat(64), kind: 'decision', outcome: 'allow', tool: 'echo', n: 12, x: 0.5, deep: { a: [1, 'é', null, true] } }, key),
);

function outcome(read: (l: string) => unknown, l: string): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: read(l) };
  } catch (e) {
    assert.ok(e instanceof EntryFormatError, `only EntryFormatError, got ${String(e)}`);
    return { ok: false };
  }
}

function agree(l: string) {
  assert.deepEqual(outcome(readEntryLine, l), outcome(parseStoredEntry, l), JSON.stringify(l));
}

test('same answer as the strict reader where JSON.parse is laxer', () => {
  agree(line);
  const parts = [
    ['"n":12', '"n":12,"n":12'], // duplicate key
    ['"n":12', '"n":9007199254740992'], // 2^53: exact in a double, outside ±(2^53-1)
    ['"n":12', '"n":-9007199254740993'],
    ['"n":12', '"n":1e400'], // not finite
    ['"n":12', '"n":1e-400'], // underflows to zero
    ['"n":12', '"n":-0'],
    ['"n":12', '"n":"\\ud800"'], // an escaped lone surrogate: canonical JSON writes it so
    ['"n":12', '"n":"\\udc00x"'],
    ['"n":12', '"n":"\\ud83d\\ude00"'], // an escaped pair: not the canonical spelling
    ['"n":12', '"n":"\ud800"'], // a raw lone surrogate in the text
    ['"n":12', '"n":' + '['.repeat(63) + ']'.repeat(63)], // 64 levels with the entry: allowed
    ['"n":12', '"n":' + '['.repeat(64) + ']'.repeat(64)], // 65: too deep
    ['"n":12', '"__proto__":1,"n":12'],
    ['{', '['],
  ];
  for (const [from, to] of parts) agree(line.replace(from, to));
  agree(line.slice(0, -1));
  agree(line + ' ');
  agree('null');
  agree('[]');
});

test('same answer as the strict reader on random mutations of a signed entry', () => {
  const alphabet = ['"', '\\', '{', '}', '[', ']', ',', ':', '0', '1', '9', '-', '.', 'e', '+', 'u', 'd', '8', ' ', 'é', '\ud800', 'n', 'x'];
  const edit = fc.record({ at: fc.nat(), del: fc.nat({ max: 3 }), ins: fc.array(fc.constantFrom(...alphabet), { maxLength: 4 }) });
  fc.assert(
    fc.property(fc.array(edit, { minLength: 1, maxLength: 3 }), (edits) => {
      let l = line;
      for (const e of edits) {
        const at = e.at % (l.length + 1);
        l = l.slice(0, at) + e.ins.join('') + l.slice(at + e.del);
      }
      agree(l);
    }),
    { numRuns: 3000 },
  );
});

test('the signed bytes cut from the line are the canonical entry without sig, or the cut is not made', () => {
  const unsigned = (l: string) => {
    const { sig: _sig, ...rest } = JSON.parse(l) as Record<string, unknown>;
    return canonicalize(rest);
  };
  assert.equal(unsignedForm(line, (JSON.parse(line) as { sig: string }).sig), unsigned(line));
  // A nested member spelled like the top-level one (same value): ambiguous, so no cut; the
  // caller canonicalizes, and the signature (over the body without the nested member) fails.
  const sig = (JSON.parse(line) as { sig: string }).sig;
  const twice = canonicalize({ ...(JSON.parse(line) as object), deep: { a: 1, sig } });
  assert.equal(unsignedForm(twice, sig), null);
  const c = checkEntryLine(twice, key.publicKey);
  assert.ok(c.ok && !c.sigOk, 'a member added after signing fails the signature');
  // Random entries: the cut, when made, is exactly the canonical unsigned form.
  fc.assert(
    fc.property(fc.dictionary(fc.string({ maxLength: 6 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 5 }), (extra) => {
      const e = { ...extra, v: 1, seq: 3, ts: '2026-11-30T10:00:00.000Z', prev: 'sha256:' + '1'.repeat(64), kind: 'decision', sig: randomBytes(64).toString('base64') };
      const l = canonicalize(e);
      const cut = unsignedForm(l, e.sig);
      if (cut !== null) assert.equal(cut, unsigned(l));
    }),
    { numRuns: 2000 },
  );
});

test('the signature decoder gives the bytes Buffer.from gives, for any spelling', () => {
  const same = (s: string) => assert.ok(Buffer.from(signatureBytes(s)).equals(Buffer.from(s, 'base64')), JSON.stringify(s));
  for (let i = 0; i < 2000; i++) same(randomBytes(64).toString('base64'));
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=-_ .\né\ud800';
  fc.assert(
    fc.property(fc.uint8Array({ minLength: 64, maxLength: 64 }), fc.array(fc.record({ at: fc.nat(89), ch: fc.constantFrom(...alphabet) }), { minLength: 1, maxLength: 3 }), (bytes, edits) => {
      const s = Buffer.from(bytes).toString('base64').split('');
      for (const e of edits) s[e.at % s.length] = e.ch;
      same(s.join(''));
      same(s.join('').slice(0, 87));
      same(Buffer.from(bytes).toString('base64url'));
    }),
    { numRuns: 5000 },
  );
});
