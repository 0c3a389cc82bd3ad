// Single-entry proofs (issue 21, item 5), through the real binary: `ledger prove SEQ` and
// `verify --proof` round-trip for every entry of a ledger anchored to a real RFC 3161 TSA
// (openssl) and the in-repo Rekor log; a tampered, spliced or foreign entry, a bent audit path or
// a tampered anchor is refused; the proof carries no other entry.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CLI, cloakpipe, makeHome, tempDir } from '../helpers/cli.js';
import { startOpensslTsa, type TestTsa } from '../helpers/openssl-tsa.js';
import { startFakeRekor, type FakeRekor } from '../helpers/fake-rekor.js';
import { entries, session, tamper } from './session.js';

let tsa: TestTsa;
let rekor: FakeRekor;
let trust: { tsaRoot: string; rekorKey: string };
let home: string;
let foreign: string;
before(async () => {
  [tsa, rekor] = await Promise.all([startOpensslTsa('Proof TSA'), startFakeRekor()]);
  const dir = tempDir();
  trust = { tsaRoot: join(dir, 'tsa.pem'), rekorKey: join(dir, 'rekor.pem') };
  writeFileSync(trust.tsaRoot, tsa.chainPem);
  writeFileSync(trust.rekorKey, rekor.publicKeyPem);
  home = makeHome();
  await session(home, 2);
  await anchor(home);
  await session(home, 1);
  await anchor(home);
  foreign = makeHome();
  await session(foreign, 1);
  await anchor(foreign);
});
after(async () => {
  await Promise.all([tsa?.close(), rekor?.close()]);
});

// The TSA and the log run in this process: commands that reach them must not block it.
async function anchor(h: string) {
  await promisify(execFile)(process.execPath, [CLI, 'ledger', 'anchor', '--home', h, '--tsa', tsa.url, '--tsa-root', trust.tsaRoot, '--rekor', rekor.url, '--rekor-key', trust.rekorKey], { timeout: 60_000 });
}

function prove(h: string, seq: number): { status: number | null; stdout: string; file: string } {
  const file = join(tempDir(), `proof-${seq}.json`);
  const r = cloakpipe(['ledger', 'prove', String(seq), '--out', file, '--home', h]);
  return { status: r.status, stdout: r.stdout + r.stderr, file };
}

const check = (file: string, h = home, ...extra: string[]) =>
  cloakpipe(['verify', '--proof', file, '--public-key', join(h, 'gate.pub'), '--tsa-root', trust.tsaRoot, '--rekor-key', trust.rekorKey, '--require-anchors', ...extra]);

function edited(file: string, edit: (p: any) => void): string {
  const p = JSON.parse(readFileSync(file, 'utf8'));
  edit(p);
  const out = join(tempDir(), 'edited.json');
  writeFileSync(out, JSON.stringify(p));
  return out;
}

function refused(file: string, code: RegExp, h = home) {
  const r = check(file, h);
  assert.equal(r.status, 1, r.stdout + r.stderr);
  assert.match(r.stdout, code);
}

test('every sealed entry of the ledger has a proof that verifies alone, with its anchors; the open tail has none', () => {
  const all = entries(home);
  const epochs = all.filter((e) => e.kind === 'epoch');
  assert.equal(epochs.length, 2);
  const newest = epochs.at(-1)!.seq;
  for (const e of all) {
    const p = prove(home, e.seq);
    if (e.seq >= newest) {
      assert.equal(p.status, 1, p.stdout);
      assert.match(p.stdout, new RegExp(`no proof: entry ${e.seq} is not sealed in an epoch yet`));
      continue;
    }
    assert.equal(p.status, 0, p.stdout);
    const r = check(p.file);
    assert.equal(r.status, 0, `entry ${e.seq}: ${r.stdout}${r.stderr}`);
    const epoch = epochs.find((x) => x.first <= e.seq && e.seq <= x.last);
    assert.match(r.stdout, new RegExp(`^proof verified: entry ${e.seq} \\(${e.kind}\\) is in epoch ${epoch.seq} \\(entries ${epoch.first}\\.\\.${epoch.last}\\)`));
    assert.match(r.stdout, /rfc3161 1 verified; rekor 1 verified/);
  }
  const json = JSON.parse(check(prove(home, 0).file, home, '--json').stdout);
  assert.deepEqual([json.ok, json.seq, json.anchors.rekor.verified], [true, 0, 1]);
});

test('a proof carries the one entry and its epoch, no other entry', () => {
  const all = entries(home);
  const target = all.find((e) => e.kind === 'decision')!;
  const text = readFileSync(prove(home, target.seq).file, 'utf8');
  for (const e of all) {
    if (e.seq === target.seq || (e.kind === 'epoch' && e.first <= target.seq && target.seq <= e.last)) assert.ok(text.includes(e.sig));
    else assert.ok(!text.includes(e.sig), `entry ${e.seq} leaked into the proof`);
  }
});

test('a tampered entry, a spliced entry, a foreign entry or a bent path is refused', () => {
  const all = entries(home);
  const decision = all.find((e) => e.kind === 'decision' && e.outcome === 'refuse')!;
  const file = prove(home, decision.seq).file;
  refused(edited(file, (p) => (p.entry = p.entry.replace('"outcome":"refuse"', '"outcome":"allow"'))), /\(signature_invalid\): the entry: signature/);
  refused(edited(file, (p) => (p.entry = '{"outcome":"allow",' + p.entry.slice(1))), /\(entry_not_canonical\)/);
  // Another genuine entry of the same epoch, in this entry's place.
  const sibling = JSON.parse(readFileSync(prove(home, decision.seq - 1).file, 'utf8')).entry;
  refused(edited(file, (p) => (p.entry = sibling)), /\(proof_invalid\)|\(inclusion_invalid\)/);
  refused(edited(file, (p) => ((p.entry = sibling), (p.inclusion.index -= 1))), /\(inclusion_invalid\): the inclusion proof does not lead from entry/);
  refused(edited(file, (p) => (p.inclusion.hashes[0] = p.inclusion.hashes[0].replace(/^./, (c: string) => (c === '0' ? '1' : '0')))), /\(inclusion_invalid\)/);
  // An entry of another epoch with this epoch's path.
  const later = all.filter((e) => e.kind === 'epoch')[0].seq + 1;
  refused(edited(file, (p) => (p.entry = JSON.parse(readFileSync(prove(home, later).file, 'utf8')).entry)), /\(proof_invalid\): entry \d+ is not in epoch/);
  // A proof from another gate's ledger, checked with this gate's key.
  const alien = prove(foreign, 1);
  assert.equal(alien.status, 0);
  refused(alien.file, /\(signature_invalid\)/);
  assert.equal(check(alien.file, foreign).status, 0, 'with its own key it holds');
  // A foreign entry spliced into this proof.
  refused(edited(file, (p) => (p.entry = JSON.parse(readFileSync(alien.file, 'utf8')).entry)), /\(signature_invalid\)/);
});

test('a tampered anchor, a missing anchor or a duplicate key in the proof file is refused', () => {
  const file = prove(home, 1).file;
  const flip = (b64: string) => {
    const b = Buffer.from(b64, 'base64');
    b[b.length - 10] ^= 1;
    return b.toString('base64');
  };
  refused(edited(file, (p) => (p.anchors.find((a: any) => a.kind === 'rfc3161').token = flip(p.anchors.find((a: any) => a.kind === 'rfc3161').token))), /\(anchor_invalid: rfc3161 /);
  refused(edited(file, (p) => (p.anchors = p.anchors.filter((a: any) => a.kind !== 'rekor'))), /\(unanchored\): epoch \d+ carries no verified rekor anchor/);
  const text = readFileSync(file, 'utf8');
  const dup = join(tempDir(), 'dup.json');
  writeFileSync(dup, '{"entry":"x",' + text.slice(1));
  refused(dup, /\(proof_invalid\): proof: not strict JSON/);
});

test('ledger prove refuses an entry the ledger does not hold as signed', () => {
  const h = makeHome();
  return session(h).then(async () => {
    await anchor(h);
    const seq = entries(h).find((e) => e.kind === 'decision').seq;
    tamper(h, (db) => db.prepare(`UPDATE entries SET body = replace(body, '"outcome":"allow"', '"outcome":"refuse"') WHERE seq = ?`).run(seq));
    const p = prove(h, seq);
    assert.equal(p.status, 1, p.stdout);
    assert.match(p.stdout, new RegExp(`no proof: entry ${seq} does not verify \\(signature_invalid\\)`));
    assert.match(prove(h, 9999).stdout, /no proof: the ledger holds no entry 9999/);
  });
});
