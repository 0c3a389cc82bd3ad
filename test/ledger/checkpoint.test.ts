// Checkpoints (issue 12, item 17), through the real binary: deleting the newest entries leaves a
// ledger that still chains and verifies, so an auditor keeps `ledger checkpoint` notes and
// `verify --checkpoint` fails unless every entry a note covers is still there, unchanged. And
// `--require-anchors` needs no flag for Rekor: the public Rekor key is built in.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, createPublicKey, generateKeyPairSync } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { CLI, cloakpipe, makeHome, tempDir } from '../helpers/cli.js';
import { REKOR_ENTRIES, fixtureText } from '../helpers/public-log.js';
import { startFakeRekor, type FakeRekor } from '../helpers/fake-rekor.js';
import { openDb } from '../../src/store/sqlite/db.js';
import { loadGateKey } from '../../src/ledger/keys.js';
import { signCheckpoint } from '../../src/ledger/checkpoint.js';
import { FileSigner } from '../../src/keys/file.js';
import { verifyRekorEntry } from '../../src/ledger/anchors/rekor/verify.js';
import { PUBLIC_REKOR_KEY_PEM } from '../../src/ledger/verify/public-rekor.js';
import { rechainFrom, entryAt, putEntry, resign } from './epoch-fixture.js';
import { entries, session, tamper } from './session.js';

let rekor: FakeRekor;
before(async () => {
  rekor = await startFakeRekor();
});
after(async () => {
  await rekor?.close();
});

const verify = (home: string, ...extra: string[]) => cloakpipe(['verify', '--home', home, ...extra], { timeout: 120_000 });

function checkpoint(home: string): string {
  const out = join(tempDir(), 'checkpoint.txt');
  const r = cloakpipe(['ledger', 'checkpoint', '--home', home, '--out', out], { timeout: 120_000 });
  assert.equal(r.status, 0, r.stdout + r.stderr);
  return out;
}

test('a checkpoint is a C2SP signed note of the size and root, signed by the gate key', async () => {
  const home = makeHome();
  await session(home);
  const n = entries(home).length;
  const r = cloakpipe(['ledger', 'checkpoint', '--home', home]);
  assert.equal(r.status, 0, r.stderr);
  const [text, sigs] = r.stdout.split('\n\n');
  const [origin, size, root, ...rest] = text.split('\n');
  assert.match(origin, /^cloakpipe\.ledger\/[0-9a-f]{16}$/);
  assert.equal(size, String(n));
  assert.equal(Buffer.from(root, 'base64').length, 32);
  assert.deepEqual(rest, []);
  // C2SP signed note: "— <name> <base64(key id || signature)>", key id = SHA-256(name \n 0x01 raw key)[:4].
  const m = /^\u2014 (\S+) (\S+)\n$/.exec(sigs);
  assert.ok(m, sigs);
  assert.equal(m![1], origin);
  const pub = createPublicKey(readFileSync(join(home, 'gate.pub')));
  const raw = Buffer.from(pub.export({ format: 'jwk' }).x!, 'base64url');
  const blob = Buffer.from(m![2], 'base64');
  assert.deepEqual(blob.subarray(0, 4), createHash('sha256').update(`${origin}\n\x01`).update(raw).digest().subarray(0, 4));
  const { verify: edVerify } = await import('node:crypto');
  assert.ok(edVerify(null, Buffer.from(text + '\n'), pub, blob.subarray(4)));
  const ok = verify(home, '--checkpoint', checkpoint(home));
  assert.equal(ok.status, 0, ok.stdout + ok.stderr);
  assert.match(ok.stdout, /checkpoints\s+1 held/);
});

test('deleting the newest entries verifies without a checkpoint and fails with one', async () => {
  const home = makeHome();
  await session(home);
  const early = checkpoint(home);
  const n = entries(home).length;
  await session(home);
  const late = checkpoint(home);
  const total = entries(home).length;
  tamper(home, (db) => db.prepare('DELETE FROM entries WHERE seq > ?').run(n + 1));
  const plain = verify(home);
  assert.equal(plain.status, 0, 'what remains still chains: the deletion leaves no trace in it');
  assert.match(plain.stdout, new RegExp(`verified: ${n + 2} entries`));
  const bad = verify(home, '--checkpoint', early, '--checkpoint', late);
  assert.equal(bad.status, 1, bad.stdout);
  assert.match(bad.stdout, new RegExp(`^ledger INVALID at seq ${n + 2} \\(checkpoint_not_held\\): a checkpoint covers ${total} entries; the ledger holds ${n + 2}`));
  assert.equal(verify(home, '--checkpoint', early).status, 0, 'the earlier checkpoint is still held');
  assert.equal(JSON.parse(verify(home, '--checkpoint', late, '--json').stdout).failure.code, 'checkpoint_not_held');
});

test('a history rewritten by the key holder verifies alone and fails against a checkpoint taken before', async () => {
  const home = makeHome();
  await session(home, 2);
  const cp = checkpoint(home);
  const key = loadGateKey(join(home, 'gate.key'));
  const db = openDb(join(home, 'ledger.db'));
  try {
    const e = entryAt(db, 2);
    putEntry(db, 2, resign({ ...e, note: 'rewritten' } as typeof e, key.privateKey));
    rechainFrom(db, 3, key.privateKey);
  } finally {
    db.close();
  }
  assert.equal(verify(home).status, 0, 're-signed and re-chained: verifies without a checkpoint');
  const r = verify(home, '--checkpoint', cp);
  assert.equal(r.status, 1);
  assert.match(r.stdout, /\(checkpoint_mismatch\): the first \d+ entries are not those the checkpoint covers/);
});

test('a checkpoint not signed by the gate key, or edited, is refused; a cosignature is ignored', async () => {
  const home = makeHome();
  await session(home);
  const cp = readFileSync(checkpoint(home), 'utf8');
  const dir = tempDir();
  const write = (name: string, text: string) => (writeFileSync(join(dir, name), text), join(dir, name));
  const other = generateKeyPairSync('ed25519');
  const [, size] = cp.split('\n');
  const cases: [string, string, RegExp][] = [
    ['edited-size', cp.replace(`\n${size}\n`, `\n${Number(size) - 1}\n`), /signature does not verify/],
    ['other-key', signCheckpoint({ size: 1, root: 'sha256:' + '00'.repeat(32) }, new FileSigner(other.privateKey)), /no signature by this gate key/],
    ['no-note', 'hello\n', /not a signed note/],
    ['two-sigs', cp + cp.split('\n\n')[1], /two signatures by the gate key/],
  ];
  for (const [name, text, why] of cases) {
    const r = verify(home, '--checkpoint', write(name, text));
    assert.equal(r.status, 1, name);
    assert.match(r.stdout, /\(checkpoint_invalid\)/, name);
    assert.match(r.stdout, why, name);
  }
  const cosigned = cp + `\u2014 auditor.example ${Buffer.alloc(68, 7).toString('base64')}\n`;
  assert.equal(verify(home, '--checkpoint', write('cosigned', cosigned)).status, 0);
  assert.equal(verify(home, '--checkpoint', join(dir, 'missing')).status, 2, 'an unreadable file is a usage error');
});

test('ledger checkpoint signs nothing for a ledger that does not verify', async () => {
  const home = makeHome();
  await session(home);
  tamper(home, (db) => db.prepare(`UPDATE entries SET body = replace(body, '"outcome":"refuse"', '"outcome":"allow"') WHERE kind = 'decision'`).run());
  const r = cloakpipe(['ledger', 'checkpoint', '--home', home]);
  assert.equal(r.status, 1);
  assert.match(r.stdout, /ledger INVALID at seq \d+ \(signature_invalid\).*no checkpoint signed/);
  assert.doesNotMatch(r.stdout, /\u2014/);
});

test('the built-in Rekor key is the public log key: real entries verify with it', () => {
  assert.equal(PUBLIC_REKOR_KEY_PEM, fixtureText('rekor-public.pem'));
  for (const name of REKOR_ENTRIES) assert.ok(verifyRekorEntry(fixtureText(name), PUBLIC_REKOR_KEY_PEM).logIndex >= 0, name);
});

test('--require-anchors needs no flag: Rekor anchors are required and checked with the built-in key', async () => {
  const home = makeHome();
  await session(home);
  const unanchored = verify(home, '--require-anchors');
  assert.equal(unanchored.status, 1, unanchored.stdout + unanchored.stderr);
  assert.match(unanchored.stdout, /\(unanchored\): \d+ entries from seq 0 lie outside every anchored epoch \(rekor\)/);
  // Anchored to another log (the in-repo one): its entries do not verify with the public key.
  const keyFile = join(tempDir(), 'rekor.pem');
  writeFileSync(keyFile, rekor.publicKeyPem);
  // The log runs in this process: the command that reaches it must not block it.
  await promisify(execFile)(process.execPath, [CLI, 'ledger', 'anchor', '--home', home, '--rekor', rekor.url, '--rekor-key', keyFile], { timeout: 60_000 });
  assert.equal(verify(home, '--require-anchors', '--rekor-key', keyFile).status, 0, 'with that log key given it holds');
  const builtin = verify(home, '--require-anchors');
  assert.equal(builtin.status, 1, builtin.stdout);
  assert.match(builtin.stdout, /\(anchor_invalid: rekor /);
});
