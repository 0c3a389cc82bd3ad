// verify over real signed ledgers: a clean ledger passes (inline and on worker threads, from a
// home and from an export); each kind of tampering fails with a precise code naming the first
// bad entry; verify opens no socket; the key inside an export is not a trust root.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { sealEpochInTx } from '../../src/ledger/epoch.js';
import { exportLedger } from '../../src/ledger/export.js';
import { withSnapshot } from '../store/helpers.js';
import { verifyLedger, type VerifyReport } from '../../src/ledger/verify/index.js';
import { storeAnchor } from '../../src/ledger/epoch-anchors.js';
import { cloakpipe, tempDir, ROOT } from '../helpers/cli.js';
import { fixture, gateKey, entryAt, putEntry, resign, rechainFrom, type Fixture } from './epoch-fixture.js';

/** 0..9 entries, epoch at 10, 11..15 entries, epoch at 16, 17..19 entries (an unsealed tail). */
function sample(): Fixture {
  const f = fixture();
  f.add(10);
  sealEpochInTx(f.ledger);
  f.add(5);
  sealEpochInTx(f.ledger);
  f.add(3);
  return f;
}

/** Worker set-ups that must report exactly what the inline check reports: workers reading their
 *  own row ranges of one row, a few rows (ranges whose leaves fold into several subtrees, an epoch
 *  tree whose start the worker guessed wrong), 5 and 8 rows (epoch entries on a range's first row,
 *  aligned ranges folded into one subtree, a last partial range), one worker. */
const POOLED = [
  { workers: 2, inlineFirst: 0, batchSize: 1 },
  { workers: 2, inlineFirst: 0, batchSize: 3 },
  { workers: 1, inlineFirst: 5, batchSize: 4 },
  { workers: 2, inlineFirst: 0, batchSize: 5 },
  { workers: 2, inlineFirst: 0, batchSize: 8 },
];

/** Verify inline; unless `opts` names workers, also on every POOLED set-up, which must agree, and
 *  hand the same entries to a reader (onEntry) in the same order. */
async function run(f: Fixture, opts: Parameters<typeof verifyLedger>[1] = {}): Promise<VerifyReport> {
  const handed = (seen: number[]) => ({ onEntry: (e: { seq: number }) => seen.push(e.seq) });
  const inlineSeen: number[] = [];
  const inline = await verifyLedger({ ledgerDb: f.path }, { publicKey: f.key.publicKey, workers: 0, ...handed(inlineSeen), ...opts });
  if (opts.workers === undefined)
    for (const p of POOLED) {
      const seen: number[] = [];
      const pooled = await verifyLedger({ ledgerDb: f.path }, { publicKey: f.key.publicKey, ...handed(seen), ...opts, ...p });
      assert.deepEqual({ ...pooled }, { ...inline }, `${JSON.stringify(p)} disagrees with the inline check`);
      assert.deepEqual(seen, inlineSeen, `${JSON.stringify(p)} hands a reader other entries`);
    }
  return inline;
}

function failed(r: VerifyReport, code: string, seq: number | null) {
  assert.equal(r.ok, false, 'verify must fail');
  assert.equal(r.failure?.code, code, JSON.stringify(r.failure));
  assert.equal(r.failure?.seq, seq, JSON.stringify(r.failure));
}

test('a clean ledger verifies inline and on worker threads, with its epochs and tail', async () => {
  const f = sample();
  const inline = await run(f);
  assert.equal(inline.failure, null);
  assert.deepEqual([inline.ok, inline.entries, inline.epochs], [true, 20, 2]);
  assert.deepEqual(inline.unanchored, { from: 0, count: 20 }, 'no anchors at all: all unanchored');
  const pooled = await run(f, { workers: 2, inlineFirst: 3, batchSize: 4 });
  assert.deepEqual({ ...pooled }, { ...inline });
});

test('progress is reported up to the total', async () => {
  const f = sample();
  const seen: number[] = [];
  await run(f, { onProgress: (d, t) => (assert.equal(t, 20), seen.push(d)) });
  assert.equal(seen.at(-1), 20);
});

test('an edited field fails the signature of that entry', async () => {
  const f = sample();
  f.db.prepare(`UPDATE entries SET body = json_set(body, '$.tool', 'rm') WHERE seq = 3`).run();
  failed(await run(f), 'signature_invalid', 3);
  const pooled = await run(f, { workers: 2, inlineFirst: 0, batchSize: 2 });
  failed(pooled, 'signature_invalid', 3);
});

test('a deleted entry in the middle of an anchored epoch fails at the next seq', async () => {
  const f = sample();
  f.db.prepare('DELETE FROM entries WHERE seq = 4').run();
  const r = await run(f);
  failed(r, 'seq_not_contiguous', 5);
  assert.match(r.failure!.detail, /expected seq 4/);
});

test('a deleted entry at the tail of an epoch fails at the epoch entry', async () => {
  const f = sample();
  f.db.prepare('DELETE FROM entries WHERE seq = 9').run();
  failed(await run(f), 'seq_not_contiguous', 10);
});

test('deleting a tail that held an anchored epoch leaves an orphan anchor', async () => {
  const f = sample();
  storeAnchor(f.anchors, { epoch: 16, kind: 'rfc3161', token: 'AA==' });
  f.db.prepare('DELETE FROM entries WHERE seq >= 16').run();
  failed(await run(f), 'anchor_orphan', 16);
});

test('two swapped entries fail, even when the forger renumbers them', async () => {
  const f = sample();
  const a = entryAt(f.db, 12);
  const b = entryAt(f.db, 13);
  putEntry(f.db, 12, b);
  putEntry(f.db, 13, a);
  failed(await run(f), 'seq_not_contiguous', 13);
  // Renumbered without the key: the signatures no longer hold.
  putEntry(f.db, 12, { ...b, seq: 12 });
  putEntry(f.db, 13, { ...a, seq: 13 });
  failed(await run(f), 'signature_invalid', 12);
});

test('a back-dated entry fails on time, even re-signed and re-chained with the right key', async () => {
  const f = sample();
  const last = entryAt(f.db, 19);
  putEntry(f.db, 19, resign({ ...last, ts: '2020-01-01T00:00:00.000Z' }, f.key.privateKey));
  failed(await run(f), 'time_decreasing', 19);
  const g = sample();
  const mid = entryAt(g.db, 5);
  putEntry(g.db, 5, resign({ ...mid, ts: entryAt(g.db, 2).ts }, g.key.privateKey));
  rechainFrom(g.db, 6, g.key.privateKey);
  failed(await run(g), 'time_decreasing', 5);
});

test('an entry rewritten and re-signed by the key holder, not re-chained, breaks the chain at the next entry', async () => {
  const f = sample();
  putEntry(f.db, 7, resign({ ...entryAt(f.db, 7), tool: 'rm' }, f.key.privateKey));
  const r = await run(f);
  failed(r, 'chain_broken', 8);
  assert.match(r.failure!.detail, /entry 7/);
  const g = sample(); // the same at a range's first entry and inside one (POOLED batch sizes 1, 3, 4)
  putEntry(g.db, 11, resign({ ...entryAt(g.db, 11), tool: 'rm' }, g.key.privateKey));
  failed(await run(g), 'chain_broken', 12);
});

test('a tamper on the first or last row of a range, or in the last partial range, fails as inline', async () => {
  // Rows 0, 4, 7, 8, 15, 16 and 19 begin or end a range in some POOLED set-up (16: an epoch entry
  // on a range's first row; 19: the last row, in a partial range).
  for (const seq of [0, 4, 7, 8, 15, 16, 19]) {
    const edited = sample();
    edited.db.prepare(`UPDATE entries SET body = json_set(body, '$.outcome', 'refuse') WHERE seq = ?`).run(seq);
    failed(await run(edited), seq === 16 ? 'entry_not_canonical' : 'signature_invalid', seq);
    const deleted = sample();
    deleted.db.prepare('DELETE FROM entries WHERE seq = ?').run(seq);
    const r = await run(deleted);
    if (seq === 19) assert.equal(r.ok, true, 'the newest entry deleted: a shorter ledger, caught by checkpoints and anchors only');
    else failed(r, 'seq_not_contiguous', seq + 1);
    const resigned = sample();
    // Another outcome, not another time: a time rewritten to ".999Z" was no edit at all for the
    // one entry in a thousand whose clock reading already ended so (the test failed that way once).
    const e = entryAt(resigned.db, seq);
    putEntry(resigned.db, seq, resign({ ...e, outcome: e.outcome === 'refuse' ? 'allow' : 'refuse' }, resigned.key.privateKey));
    const c = await run(resigned);
    if (seq === 19) assert.equal(c.ok, true);
    // 16, an epoch entry, now carries an `outcome` no epoch holds: refused where it stands.
    else if (seq === 16) assert.equal(c.failure?.code, 'epoch_invalid', JSON.stringify(c.failure));
    else assert.equal(c.failure?.seq, seq + 1, JSON.stringify(c.failure));
  }
});

test('rows whose keys do not start at 0, or one below 0, are read as inline reads them', async () => {
  const f = sample();
  f.db.prepare('DELETE FROM entries WHERE seq = 0').run(); // keys 1..19: no gap, another first key
  failed(await run(f), 'seq_not_contiguous', 1);
  const g = sample();
  const copy = g.db.prepare('SELECT ts, kind, hash, body FROM entries WHERE seq = 5').get() as Record<string, string>;
  g.db.prepare('INSERT INTO entries (seq, ts, kind, hash, body) VALUES (?, ?, ?, ?, ?)').run(-1, copy.ts, copy.kind, copy.hash, copy.body);
  failed(await run(g), 'seq_not_contiguous', 5); // read like any row, never skipped (next test)
});

test('a row stored under a far key (a forger inserting past the end) fails where it stands', async () => {
  const f = sample();
  const copy = f.db.prepare('SELECT ts, kind, hash, body FROM entries WHERE seq = 5').get() as Record<string, string>;
  f.db.prepare('INSERT INTO entries (seq, ts, kind, hash, body) VALUES (?, ?, ?, ?, ?)').run(1e12, copy.ts, copy.kind, copy.hash, copy.body);
  failed(await run(f), 'seq_not_contiguous', 5);
});

test('a row stored below seq 0 (a forger inserting before the start) is read and refused, not skipped', async () => {
  const f = sample();
  const copy = f.db.prepare('SELECT ts, kind, hash, body FROM entries WHERE seq = 5').get() as Record<string, string>;
  f.db.prepare('INSERT INTO entries (seq, ts, kind, hash, body) VALUES (?, ?, ?, ?, ?)').run(-1, copy.ts, copy.kind, copy.hash, copy.body);
  failed(await run(f), 'seq_not_contiguous', 5);
  // A row that claims seq -1 itself, in an otherwise empty ledger: nothing verifies "0 entries".
  const g = fixture();
  g.db.prepare('INSERT INTO entries (seq, ts, kind, hash, body) VALUES (?, ?, ?, ?, ?)').run(-1, copy.ts, copy.kind, copy.hash, copy.body.replace('"seq":5', '"seq":-1'));
  const r = await run(g);
  assert.equal(r.ok, false, 'an empty chain with a foreign row does not verify');
  // ledger show lists it as unreadable (it lacks the fields a row prints) and exits 1.
  const home = join(g.path, '..');
  writeFileSync(join(home, 'gate.pub'), g.key.publicKey.export({ type: 'spki', format: 'pem' }) as string);
  g.db.prepare('INSERT INTO entries (seq, ts, kind, hash, body) VALUES (?, ?, ?, ?, ?)').run(-2, copy.ts, copy.kind, copy.hash, '{"seq":-2}');
  const shown = cloakpipe(['ledger', 'show', '--home', home]);
  assert.equal(shown.status, 1, shown.stdout + shown.stderr);
  assert.match(shown.stdout, /UNREADABLE: entry lacks seq, ts or kind/);
  assert.match(shown.stdout, /^\s+-1\s/m, 'the row claiming seq -1 is shown');
  // An export carries it too, and fails verify the same way.
  const out = join(tempDir('cp-verify-neg-'), 'ledger.jsonl');
  assert.deepEqual(await withSnapshot(f.path, (snap) => exportLedger(snap, f.key.publicKey, out)), { entries: 21, anchors: 0 });
  failed(await verifyLedger({ exportFile: out }, { publicKey: f.key.publicKey, workers: 0 }), 'seq_not_contiguous', 5);
});

test('a duplicate key or another spelling of the same entry is refused, even with a valid signature', async () => {
  const f = sample();
  const body = (f.db.prepare('SELECT body FROM entries WHERE seq = 4').get() as { body: string }).body;
  const spellings = [
    body.replace('"kind":"decision"', '"kind":"decision","kind":"decision"'), // duplicate key, same value
    body.replace('"v":1}', '"v":1.0}'), // another spelling of the number
    body.replace('"kind":"decision"', '"kind":"decisio\\u006e"'), // an escape canonical JSON does not use
    body.replace('{', '{ '), // whitespace
  ];
  for (const s of spellings) {
    assert.notEqual(s, body);
    f.db.prepare('UPDATE entries SET body = ? WHERE seq = 4').run(s);
    failed(await run(f), 'entry_not_canonical', 4);
  }
});

test("the newest entry's sig in another spelling of the same bytes is refused, by verify and by the gate", async () => {
  // Buffer.from reads text after the padding, stray characters or no padding as the same 64
  // bytes: the newest entry, which no later prev pins, could carry anything in its sig and verify.
  const f = sample();
  const e = entryAt(f.db, 19);
  for (const sig of [e.sig + ' wire 1000000 USD to account 42', e.sig.slice(0, 86), e.sig.slice(0, 40) + '*' + e.sig.slice(40), e.sig.slice(0, 85) + String.fromCharCode(e.sig.charCodeAt(85) + 1) + '==']) {
    if (Buffer.from(sig, 'base64').equals(Buffer.from(e.sig, 'base64')) === false) continue; // only spellings of the same bytes
    putEntry(f.db, 19, { ...e, sig });
    failed(await run(f), 'entry_not_canonical', 19);
    assert.throws(() => f.ledger.head(), /newest ledger entry \(seq 19\) is not signed by this home's gate key/, 'the gate does not chain on top of it');
  }
  putEntry(f.db, 19, e);
  assert.equal((await run(f)).ok, true);
});

test('an entry re-signed with another key fails; so does a whole ledger forged with another key', async () => {
  const f = sample();
  const other = gateKey();
  putEntry(f.db, 7, resign(entryAt(f.db, 7), other.privateKey));
  failed(await run(f), 'signature_invalid', 7);
  const g = sample();
  putEntry(g.db, 0, resign(entryAt(g.db, 0), other.privateKey));
  rechainFrom(g.db, 1, other.privateKey);
  failed(await run(g), 'signature_invalid', 0);
});

test('a rewritten history (key holder) with a stale epoch root fails the epoch root', async () => {
  const f = sample();
  putEntry(f.db, 3, resign({ ...entryAt(f.db, 3), tool: 'rm' }, f.key.privateKey));
  rechainFrom(f.db, 4, f.key.privateKey);
  failed(await run(f), 'epoch_root_mismatch', 10);
});

test('an epoch whose range does not tile the ledger fails', async () => {
  const f = sample();
  putEntry(f.db, 16, resign({ ...entryAt(f.db, 16), first: 11 }, f.key.privateKey));
  rechainFrom(f.db, 17, f.key.privateKey);
  failed(await run(f), 'epoch_invalid', 16);
});

test('an export verifies with the given key; the key inside it is not a trust root', async () => {
  const f = sample();
  const out = join(tempDir(), 'ledger.jsonl');
  const n = await withSnapshot(f.path, (snap) => exportLedger(snap, f.key.publicKey, out));
  assert.deepEqual(n, { entries: 20, anchors: 0 });
  const given = await verifyLedger({ exportFile: out }, { publicKey: f.key.publicKey, workers: 0 });
  assert.equal(given.ok, true);
  assert.equal(given.keySource, 'given');
  // A forger rewrites everything with their own key and puts that key in the header.
  const forger = gateKey();
  putEntry(f.db, 0, resign(entryAt(f.db, 0), forger.privateKey));
  rechainFrom(f.db, 1, forger.privateKey);
  const forged = join(tempDir(), 'forged.jsonl');
  await withSnapshot(f.path, (snap) => exportLedger(snap, forger.publicKey, forged));
  failed(await verifyLedger({ exportFile: forged }, { publicKey: f.key.publicKey, workers: 0 }), 'key_mismatch', null);
  // With the header key swapped back, the signatures give the forgery away.
  const lines = readFileSync(forged, 'utf8').split('\n');
  lines[0] = readFileSync(out, 'utf8').split('\n')[0];
  writeFileSync(forged, lines.join('\n'));
  failed(await verifyLedger({ exportFile: forged }, { publicKey: f.key.publicKey, workers: 0 }), 'signature_invalid', 0);
  // Without --public-key the embedded key is used, and the report says so.
  const embedded = await verifyLedger({ exportFile: out }, { workers: 0 });
  assert.equal(embedded.keySource, 'embedded');
  assert.match(embedded.warnings.join('\n'), /trusting the gate key inside the export/);
});

test('an export whose bytes are not UTF-8 is refused, though a lenient decoder reads them as the U+FFFD an entry holds', async () => {
  const f = sample();
  f.db.transaction(() => f.ledger.appendInTx({ kind: 'decision', outcome: 'refuse', reason: 'undeclared_tool', tool: 'send\uFFFDmoney', manifest_digest: 'sha256:' + 'cd'.repeat(32), policy_digest: 'sha256:' + 'ef'.repeat(32) }))();
  f.add(1);
  const out = join(tempDir(), 'ledger.jsonl');
  await withSnapshot(f.path, (snap) => exportLedger(snap, f.key.publicKey, out));
  assert.equal((await verifyLedger({ exportFile: out }, { publicKey: f.key.publicKey, workers: 0 })).ok, true);
  const bytes = readFileSync(out);
  const at = bytes.indexOf('send\uFFFDmoney');
  // U+FFFD's three bytes as one other byte: a lenient reader still sees U+FFFD, a byte-wise one
  // (SQLite's JSON functions, once imported) another tool name.
  writeFileSync(out, Buffer.concat([bytes.subarray(0, at + 4), Buffer.from([0xc0]), bytes.subarray(at + 7)]));
  failed(await verifyLedger({ exportFile: out }, { publicKey: f.key.publicKey, workers: 0 }), 'source_invalid', null);
});

test('a truncated export fails as a source problem', async () => {
  const f = sample();
  const out = join(tempDir(), 'ledger.jsonl');
  await withSnapshot(f.path, (snap) => exportLedger(snap, f.key.publicKey, out));
  const lines = readFileSync(out, 'utf8').trimEnd().split('\n');
  writeFileSync(out, lines.slice(0, -2).join('\n') + '\n');
  failed(await verifyLedger({ exportFile: out }, { publicKey: f.key.publicKey, workers: 0 }), 'source_invalid', null);
});

test('the CLI: exit 0 on a clean home, 1 naming the first bad entry, --json; no socket is ever opened', () => {
  const f = sample();
  const home = join(f.path, '..');
  writeFileSync(join(home, 'gate.pub'), f.key.publicKey.export({ type: 'spki', format: 'pem' }) as string);
  // A preload that makes every network primitive throw: verify must not need one.
  const guard = join(tempDir(), 'no-net.mjs');
  writeFileSync(
    guard,
    `import net from 'node:net'; import dns from 'node:dns'; import http from 'node:http'; import https from 'node:https'; import tls from 'node:tls';
const no = (what) => () => { process.stderr.write('NETWORK USED: ' + what + '\\n'); process.exit(99); };
net.connect = net.createConnection = no('net.connect'); net.Socket.prototype.connect = no('socket.connect');
tls.connect = no('tls.connect'); dns.lookup = no('dns.lookup'); dns.resolve = no('dns.resolve');
http.request = http.get = no('http.request'); https.request = https.get = no('https.request');
globalThis.fetch = no('fetch');
(await import('node:module')).syncBuiltinESMExports(); // named imports see the guards too
`,
  );
  const env = { ...process.env, NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --import=${guard}`.trim() };
  const ok = cloakpipe(['verify', '--home', home], { env, timeout: 120_000 });
  assert.equal(ok.status, 0, ok.stdout + ok.stderr);
  assert.match(ok.stdout, /ledger verified: 20 entries, 2 epochs/);
  assert.match(ok.stdout, /unanchored\s+20 entries from seq 0/);
  const json = cloakpipe(['verify', '--home', home, '--json', '--workers', '2'], { env, timeout: 120_000 });
  assert.equal(JSON.parse(json.stdout).ok, true, json.stderr);
  f.db.prepare(`UPDATE entries SET body = json_set(body, '$.outcome', 'refuse') WHERE seq = 14`).run();
  const bad = cloakpipe(['verify', '--home', home], { env, timeout: 120_000 });
  assert.equal(bad.status, 1, bad.stdout + bad.stderr);
  assert.match(bad.stdout, /^ledger INVALID at seq 14 \(signature_invalid\)/);
  assert.doesNotMatch(bad.stdout + bad.stderr, /refuse/, 'no payload in the failure line');
  const required = cloakpipe(['verify', '--home', home, '--require-anchors']);
  assert.equal(required.status, 1, 'requiring anchors without a trust root is no usage error: Rekor with the built-in key');
  assert.ok(ROOT);
});

test('a progress bar is drawn on a terminal only', (t) => {
  const f = sample();
  const home = join(f.path, '..');
  writeFileSync(join(home, 'gate.pub'), f.key.publicKey.export({ type: 'spki', format: 'pem' }) as string);
  const piped = cloakpipe(['verify', '--home', home]);
  assert.equal(piped.status, 0);
  assert.doesNotMatch(piped.stderr + piped.stdout, /verifying \[/);
  // script(1) runs the command on a pseudo-terminal.
  const cmd = [process.execPath, join(ROOT, 'dist/src/cli/main.js'), 'verify', '--home', home].map((a) => `'${a}'`).join(' ');
  const tty = spawnSync('script', ['-qec', cmd, '/dev/null'], { encoding: 'utf8', timeout: 120_000 });
  if (tty.error) return t.skip('script(1) is not available');
  assert.equal(tty.status, 0, tty.stdout);
  assert.match(tty.stdout, /verifying \[#+\] 100% 20\/20/);
  assert.match(tty.stdout, /ledger verified: 20 entries/);
});

test('verify streams: an export larger than its heap limit verifies', async () => {
  const f = fixture();
  f.add(40_000);
  sealEpochInTx(f.ledger);
  const dir = tempDir();
  const out = join(dir, 'big.jsonl');
  await withSnapshot(f.path, (snap) => exportLedger(snap, f.key.publicKey, out));
  const pub = join(dir, 'gate.pub');
  writeFileSync(pub, f.key.publicKey.export({ type: 'spki', format: 'pem' }) as string);
  assert.ok(readFileSync(out).length > 12 * 1024 * 1024, 'the export is larger than the heap');
  const r = spawnSync(process.execPath, ['--max-old-space-size=12', join(ROOT, 'dist/src/cli/main.js'), 'verify', '--ledger', out, '--public-key', pub, '--workers', '0'], {
    encoding: 'utf8',
    timeout: 300_000,
  });
  assert.equal(r.status, 0, r.stdout + r.stderr);
  assert.match(r.stdout, /ledger verified: 40001 entries, 1 epochs/);
});
