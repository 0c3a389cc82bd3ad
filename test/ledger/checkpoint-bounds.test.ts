// A checkpoint is unsigned text around one signature we check: stuffing it cannot make the check
// slow or lenient. 100,000 copies of the log's signature line are refused (bounded line count,
// no key signs twice) rather than each verified; witnesses' lines (other keys) are ignored within
// the bound; exactly one line of the known key is verified. Time is never asserted here:
// bench/anchor-bounds.ts prints the CPU time.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createPublicKey, generateKeyPairSync, sign } from 'node:crypto';
import { anchorCodeOf } from '../helpers/anchor-code.js';
import { verifyRekorEntry } from '../../src/ledger/anchors/rekor/verify.js';
import { MAX_NOTE_SIGNATURES } from '../../src/ledger/anchors/rekor/checkpoint.js';
import { REKOR_V2_ENTRIES, REKOR_V2_KEY, fixtureText } from '../helpers/public-log.js';

type Entry = Record<string, any>;
const cases = [
  { name: 'rekor-entry-1.json', key: createPublicKey(fixtureText('rekor-public.pem')) },
  { name: REKOR_V2_ENTRIES[0], key: createPublicKey(fixtureText(REKOR_V2_KEY)) },
];

const split = (cp: string) => {
  const i = cp.indexOf('\n\n');
  return { note: cp.slice(0, i + 1), lines: cp.slice(i + 2, -1).split('\n') };
};

test('100,000 copies of the log signature line are refused (or verified), never each verified', () => {
  for (const c of cases) {
    const e: Entry = JSON.parse(fixtureText(c.name));
    const { note, lines } = split(e.inclusionProof.checkpoint);
    e.inclusionProof.checkpoint = `${note}\n${Array(100_000).fill(lines[0]).join('\n')}\n`;
    const got = anchorCodeOf(() => verifyRekorEntry(e, c.key));
    assert.ok(got === 'checkpoint_invalid' || got === 'valid', got);
    assert.equal(got, 'checkpoint_invalid', c.name);
  }
});

test('the log line twice is refused; witness lines of other keys up to the bound are ignored', () => {
  for (const c of cases) {
    const base: Entry = JSON.parse(fixtureText(c.name));
    const { note, lines } = split(base.inclusionProof.checkpoint);
    const twice = structuredClone(base);
    twice.inclusionProof.checkpoint = `${note}\n${lines[0]}\n${lines[0]}\n`;
    assert.equal(anchorCodeOf(() => verifyRekorEntry(twice, c.key)), 'checkpoint_invalid', c.name);
    // Real witness signatures over the same note, by keys we do not know, fill the bound.
    const witnesses = Array.from({ length: MAX_NOTE_SIGNATURES }, (_, i) => {
      const k = generateKeyPairSync('ed25519');
      const sig = Buffer.concat([Buffer.from([0, 0, 0, i]), sign(null, Buffer.from(note), k.privateKey)]);
      return `\u2014 witness${i}.example ${sig.toString('base64')}`;
    });
    const cosigned = structuredClone(base);
    cosigned.inclusionProof.checkpoint = `${note}\n${[...witnesses.slice(1), lines[0]].join('\n')}\n`;
    assert.equal(anchorCodeOf(() => verifyRekorEntry(cosigned, c.key)), 'valid', c.name);
    const over = structuredClone(base);
    over.inclusionProof.checkpoint = `${note}\n${[...witnesses, lines[0]].join('\n')}\n`;
    assert.equal(anchorCodeOf(() => verifyRekorEntry(over, c.key)), 'checkpoint_invalid', c.name);
  }
});
