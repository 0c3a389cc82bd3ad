// verify (the real binary) over hostile ledgers: records that carry members no check reads,
// bytes that decode to another string than they are, empty and otherwise doctored ledgers. A
// tampered chain must never verify, and verify never crashes (no stack trace, a named reason).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { Anchoring } from '../../src/ledger/anchoring.js';
import { sealEpochInTx } from '../../src/ledger/epoch.js';
import { verifyLedger } from '../../src/ledger/verify/index.js';
import { startOpensslTsa, type TestTsa } from '../helpers/openssl-tsa.js';
import { startFakeRekor, type FakeRekor } from '../helpers/fake-rekor.js';
import { cloakpipe, makeHome, tempDir } from '../helpers/cli.js';
import { session, tamper } from './session.js';
import { fixture, entryAt, putEntry, resign, rechainFrom, type Fixture } from './epoch-fixture.js';

let tsa: TestTsa;
let rekor: FakeRekor;
before(async () => {
  [tsa, rekor] = await Promise.all([startOpensslTsa('Hostile TSA'), startFakeRekor()]);
});
after(async () => {
  await Promise.all([tsa?.close(), rekor?.close()]);
});

/** Trust files an auditor holds apart from the ledger. */
function trustFiles(f: Fixture) {
  const dir = tempDir();
  const p = { pub: join(dir, 'gate.pub'), tsa: join(dir, 'tsa.pem'), rekor: join(dir, 'rekor.pem') };
  writeFileSync(p.pub, f.key.publicKey.export({ type: 'spki', format: 'pem' }) as string);
  writeFileSync(p.tsa, tsa.chainPem);
  writeFileSync(p.rekor, rekor.publicKeyPem);
  return p;
}

/** 0..7 entries, epoch 8 anchored both ways (real TSA, Rekor-compatible log), 3 entries after. */
async function anchored(): Promise<Fixture> {
  const f = fixture();
  f.add(8);
  const a = new Anchoring({ anchors: f.anchors, ledger: f.ledger, key: f.key, transact: async (fn) => f.db.transaction(fn).immediate(), targets: { tsa: { url: tsa.url, chainPem: tsa.chainPem }, rekor: { url: rekor.url, keyPem: rekor.publicKeyPem } } });
  const r = await a.tick();
  assert.deepEqual(r.outcomes.map((o) => o.ok), [true, true], JSON.stringify(r.outcomes));
  f.add(3);
  return f;
}

const home = (f: Fixture) => join(f.path, '..');

/** `cloakpipe verify --json` of the fixture's home with every trust root; the report and exit status. */
function verifyHome(f: Fixture, extra: string[] = []) {
  const t = trustFiles(f);
  const r = cloakpipe(['verify', '--home', home(f), '--public-key', t.pub, '--tsa-root', t.tsa, '--rekor-key', t.rekor, '--json', '--workers', '0', ...extra], { timeout: 120_000 });
  assert.doesNotMatch(r.stderr, /\n\s+at /, 'no stack trace');
  return { status: r.status, report: r.stdout ? JSON.parse(r.stdout) : null, stderr: r.stderr };
}

function refused(r: ReturnType<typeof verifyHome>, code: string, seq: number | null, detail?: RegExp) {
  assert.equal(r.status, 1, r.stderr + JSON.stringify(r.report));
  assert.equal(r.report.ok, false);
  assert.equal(r.report.failure.code, code, JSON.stringify(r.report.failure));
  assert.equal(r.report.failure.seq, seq, JSON.stringify(r.report.failure));
  if (detail) assert.match(r.report.failure.detail, detail);
}

function anchorRow(f: Fixture, kind: string): any {
  return JSON.parse((f.db.prepare('SELECT data FROM anchors WHERE kind = ?').get(kind) as { data: string }).data);
}
function putAnchorRow(f: Fixture, a: any) {
  f.db.prepare('UPDATE anchors SET data = ? WHERE epoch_seq = ? AND kind = ?').run(JSON.stringify(a), a.epoch, a.kind);
}

test('an anchored ledger verifies through the binary (the baseline the tampers below break)', async () => {
  const f = await anchored();
  const r = verifyHome(f, ['--require-anchors']);
  assert.equal(r.status, 1, 'the tail after the epoch is unanchored');
  assert.equal(r.report.failure.code, 'unanchored');
  const plain = verifyHome(f);
  assert.equal(plain.status, 0, plain.stderr + JSON.stringify(plain.report));
  assert.deepEqual(plain.report.anchors, { rfc3161: { verified: 1, unchecked: 0 }, rekor: { verified: 1, unchecked: 0 } });
});

test('a stored anchor carrying a member no check reads is refused, checked or not, at any depth', async () => {
  const f = await anchored();
  const tsaRow = anchorRow(f, 'rfc3161');
  const rekorRow = anchorRow(f, 'rekor');
  const cases: [string, any][] = [
    ['rfc3161', { ...tsaRow, note: 'approved by the CISO' }],
    ['rekor', { ...rekorRow, source: 'https://example.invalid/log' }],
    ['rekor', { ...rekorRow, entry: { ...rekorRow.entry, attestation: { data: 'e30=' } } }],
    ['rekor', { ...rekorRow, entry: { ...rekorRow.entry, inclusionProof: { ...rekorRow.entry.inclusionProof, note: 'x' } } }],
  ];
  for (const [kind, doctored] of cases) {
    putAnchorRow(f, doctored);
    refused(verifyHome(f), 'anchor_invalid', 8, /which no check reads/);
    // Without the trust root for its kind, the anchor is not checked, but still not passed along.
    const t = trustFiles(f);
    const r = cloakpipe(['verify', '--home', home(f), '--public-key', t.pub, '--json', '--workers', '0']);
    assert.equal(r.status, 1, r.stdout);
    assert.equal(JSON.parse(r.stdout).failure.code, 'anchor_invalid');
    putAnchorRow(f, kind === 'rfc3161' ? tsaRow : rekorRow);
  }
  assert.equal(verifyHome(f).status, 0, 'restored: verifies again');
});

test('an epoch entry carrying a member the gate never writes is refused, though the key holder signed it', async () => {
  const f = fixture();
  f.add(5);
  sealEpochInTx(f.ledger);
  f.add(2);
  assert.equal(verifyHome(f).status, 0);
  const epoch = entryAt(f.db, 5);
  putEntry(f.db, 5, resign({ ...epoch, audited_by: 'nobody' } as typeof epoch, f.key.privateKey));
  rechainFrom(f.db, 6, f.key.privateKey);
  refused(verifyHome(f), 'epoch_invalid', 5, /"audited_by"/);
});

test('an export whose header carries a member no check reads is refused', async () => {
  const f = fixture();
  f.add(3);
  const t = trustFiles(f);
  const out = join(tempDir(), 'ledger.jsonl');
  writeFileSync(join(home(f), 'gate.pub'), readFileSync(t.pub));
  const ex = cloakpipe(['ledger', 'export', '--home', home(f), '--out', out]);
  assert.equal(ex.status, 0, ex.stderr);
  const lines = readFileSync(out, 'utf8').split('\n');
  lines[0] = JSON.stringify({ ...JSON.parse(lines[0]), verified_by: 'auditor' });
  writeFileSync(out, lines.join('\n'));
  const r = cloakpipe(['verify', '--ledger', out, '--public-key', t.pub, '--json']);
  assert.equal(r.status, 1, r.stdout + r.stderr);
  assert.equal(JSON.parse(r.stdout).failure.code, 'source_invalid');
});

test('an empty ledger is refused unless --allow-empty: a fresh home, and a home whose every entry was deleted', async () => {
  const fresh = makeHome();
  const r = cloakpipe(['verify', '--home', fresh, '--json']);
  assert.equal(r.status, 1, r.stdout + r.stderr);
  assert.deepEqual([JSON.parse(r.stdout).failure.code, JSON.parse(r.stdout).ok], ['ledger_empty', false]);
  const text = cloakpipe(['verify', '--home', fresh]);
  assert.equal(text.status, 1);
  assert.match(text.stdout, /^ledger INVALID \(ledger_empty\): the ledger holds no entry/);
  const allowed = cloakpipe(['verify', '--home', fresh, '--allow-empty']);
  assert.equal(allowed.status, 0, allowed.stdout + allowed.stderr);
  assert.match(allowed.stdout, /ledger verified: 0 entries/);
  assert.match(allowed.stderr, /warning: the ledger holds no entry: it is evidence of nothing/);
  // A gate ran here; a forger deletes every entry and anchor.
  const used = makeHome();
  await session(used);
  assert.equal(cloakpipe(['verify', '--home', used]).status, 0);
  tamper(used, (db) => db.exec('DELETE FROM entries; DELETE FROM anchors'));
  const wiped = cloakpipe(['verify', '--home', used, '--json']);
  assert.equal(wiped.status, 1, wiped.stdout + wiped.stderr);
  assert.equal(JSON.parse(wiped.stdout).failure.code, 'ledger_empty');
  // Its export, too.
  const out = join(tempDir(), 'empty.jsonl');
  assert.equal(cloakpipe(['ledger', 'export', '--home', used, '--out', out]).status, 0);
  const ex = cloakpipe(['verify', '--ledger', out, '--public-key', join(used, 'gate.pub'), '--json']);
  assert.equal(ex.status, 1, ex.stdout + ex.stderr);
  assert.equal(JSON.parse(ex.stdout).failure.code, 'ledger_empty');
});

/** A ledger holding an entry whose tool name has U+FFFD (a name the gate refused and recorded), sealed in an epoch. */
function withReplacementChar(): { f: Fixture; seq: number } {
  const f = fixture();
  f.add(2);
  f.db.transaction(() => f.ledger.appendInTx({ kind: 'decision', outcome: 'refuse', reason: 'undeclared_tool', tool: 'send\uFFFDmoney', manifest_digest: 'sha256:' + 'cd'.repeat(32), policy_digest: 'sha256:' + 'ef'.repeat(32) }))();
  f.add(2);
  sealEpochInTx(f.ledger);
  f.add(1);
  return { f, seq: 2 };
}

test("ledger.db bytes that a lenient decoder reads as the U+FFFD the entry holds are refused: verify checks the bytes that were signed", async () => {
  for (const swap of [Buffer.from([0xc0]), Buffer.from([0xf0, 0x90, 0x80]), Buffer.from([0xed, 0xa0, 0x80])]) {
    const { f, seq } = withReplacementChar();
    assert.equal(verifyHome(f).status, 0);
    const body = Buffer.from((f.db.prepare('SELECT body FROM entries WHERE seq = ?').get(seq) as { body: string }).body, 'utf8');
    const at = body.indexOf('send\uFFFDmoney');
    // U+FFFD's three bytes as others that are not UTF-8: SQLite's json_extract, the sqlite3 shell
    // and a byte-wise reader see another tool name; a lenient decoder still reads U+FFFD.
    const forged = Buffer.concat([body.subarray(0, at + 4), swap, body.subarray(at + 7)]);
    f.db.prepare('UPDATE entries SET body = CAST(? AS TEXT) WHERE seq = ?').run(forged, seq);
    assert.notDeepEqual(f.db.prepare('SELECT CAST(body AS BLOB) AS b FROM entries WHERE seq = ?').get(seq), { b: body }, 'the stored bytes changed');
    refused(verifyHome(f), 'entry_not_canonical', seq, /not UTF-8/);
    // Workers reading their own row ranges (a home longer than the inline head) see it too, at the same entry.
    for (const batchSize of [1, 2, 4]) {
      const r = await verifyLedger({ ledgerDb: f.path }, { publicKey: f.key.publicKey, workers: 2, inlineFirst: 0, batchSize });
      assert.deepEqual([r.ok, r.failure?.code, r.failure?.seq], [false, 'entry_not_canonical', seq], `batch ${batchSize}`);
    }
    // An export of it carries the stored bytes, not the lenient reading: it does not verify either.
    writeFileSync(join(home(f), 'gate.pub'), f.key.publicKey.export({ type: 'spki', format: 'pem' }) as string);
    const out = join(tempDir(), 'ledger.jsonl');
    const ex = cloakpipe(['ledger', 'export', '--home', home(f), '--out', out]);
    assert.doesNotMatch(ex.stderr, /\n\s+at /);
    assert.equal(ex.status, 2, ex.stdout + ex.stderr);
    assert.match(ex.stderr, /^cloakpipe: ledger entry 2 is stored as bytes that are not UTF-8/);
    assert.equal(existsSync(out), false, 'no export of a lenient reading');
  }
});

test('ledger show prints a forged row without its escape sequences or reordering characters', async () => {
  const f = fixture();
  f.add(3);
  const e = entryAt(f.db, 1);
  // Unsigned: show prints every row, verified or not; a terminal must not run what it holds.
  putEntry(f.db, 1, { ...e, ts: e.ts + '\u001b[2K\r', tool: 'echo\u202egnp.exe', outcome: 'allow\u001b]0;owned\u0007' } as typeof e);
  writeFileSync(join(home(f), 'gate.pub'), f.key.publicKey.export({ type: 'spki', format: 'pem' }) as string);
  const r = cloakpipe(['ledger', 'show', '--home', home(f)]);
  assert.equal(r.status, 0, r.stderr);
  assert.doesNotMatch(r.stdout, /[\u001b\u0007\r\u202e]/, 'no raw control or bidi character reaches the terminal');
  assert.match(r.stdout, /\\u001b\[2K\\u000d/);
  assert.match(r.stdout, /echo\\u202egnp\.exe/);
});

test('a row stored at the lowest key SQLite has (-2^63) is read and refused, not passed over', async () => {
  const f = fixture();
  f.add(4);
  f.db.exec('INSERT INTO entries SELECT -9223372036854775808, ts, kind, hash, body FROM entries WHERE seq = 0');
  refused(verifyHome(f), 'seq_not_contiguous', 0);
  for (const batchSize of [1, 3]) {
    const r = await verifyLedger({ ledgerDb: f.path }, { publicKey: f.key.publicKey, workers: 2, inlineFirst: 0, batchSize });
    assert.equal(r.ok, false, `workers, batch ${batchSize}: ${JSON.stringify(r.failure)}`);
  }
  // An export carries it too: it is no cleaner than the ledger.
  writeFileSync(join(home(f), 'gate.pub'), f.key.publicKey.export({ type: 'spki', format: 'pem' }) as string);
  const out = join(tempDir(), 'ledger.jsonl');
  assert.equal(cloakpipe(['ledger', 'export', '--home', home(f), '--out', out]).status, 0);
  const v = cloakpipe(['verify', '--ledger', out, '--public-key', join(home(f), 'gate.pub'), '--json']);
  assert.equal(v.status, 1, v.stdout);
  assert.equal(JSON.parse(v.stdout).failure.code, 'seq_not_contiguous');
});
