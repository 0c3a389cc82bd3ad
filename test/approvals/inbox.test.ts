import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, mkdirSync, writeFileSync, symlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateKeyPairSync } from 'node:crypto';
import { Inbox } from '../../src/approvals/inbox.js';
import { signReceipt } from '../../src/approvals/receipt.js';
import { fingerprintOf } from '../../src/core/call.js';

const key = generateKeyPairSync('ed25519');
const fp = fingerprintOf('t', {}, null);
const other = fingerprintOf('u', {}, null);

function dir() {
  const d = mkdtempSync(join(tmpdir(), 'cp-inbox-'));
  mkdirSync(join(d, 'approvals'));
  return join(d, 'approvals');
}

test('inbox: finds receipts for a fingerprint, ignores others and garbage, never throws', () => {
  const d = dir();
  const r1 = signReceipt({ privateKey: key.privateKey, fingerprint: fp, issuedAt: Date.now(), ttlMs: 60_000 });
  const r2 = signReceipt({ privateKey: key.privateKey, fingerprint: other, issuedAt: Date.now(), ttlMs: 60_000 });
  writeFileSync(join(d, 'a.json'), JSON.stringify(r1));
  writeFileSync(join(d, 'b.json'), JSON.stringify(r2));
  writeFileSync(join(d, 'c.json'), '{"fingerprint": "' + fp + '", "fingerprint": 1}'); // duplicate key
  writeFileSync(join(d, 'd.json'), '\xff\xfe garbage');
  writeFileSync(join(d, 'e.json'), JSON.stringify({ ...r1, pad: 'x'.repeat(20_000) })); // over the size cap
  writeFileSync(join(d, 'f.txt'), JSON.stringify(r1)); // not .json
  writeFileSync(join(d, '.g.tmp'), JSON.stringify(r1));
  mkdirSync(join(d, 'h.json'));
  symlinkSync(join(d, 'a.json'), join(d, 'i.json'));
  const inbox = new Inbox(d);
  const found = inbox.candidates(fp);
  assert.equal(found.length, 1);
  assert.deepEqual(found[0], r1);
  assert.equal(inbox.candidates(other).length, 1);
  // Cached reads still see a changed file.
  writeFileSync(join(d, 'a.json'), JSON.stringify(r2));
  assert.equal(inbox.candidates(fp).length, 0);
  rmSync(d, { recursive: true });
  assert.deepEqual(inbox.candidates(fp), [], 'a missing inbox is empty');
});

test('inbox: the file count is bounded', () => {
  const d = dir();
  const r = signReceipt({ privateKey: key.privateKey, fingerprint: fp, issuedAt: Date.now(), ttlMs: 60_000 });
  for (let i = 0; i < 5; i++) writeFileSync(join(d, `${i}.json`), JSON.stringify(r));
  assert.equal(new Inbox(d, { maxFiles: 3, maxBytes: 8192 }).candidates(fp).length, 3);
});
