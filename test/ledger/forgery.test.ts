// Forged bodies and unsigned columns (issue 12, item 3), through the real binary: a stored entry
// must be the exact RFC 8785 bytes its signature covers, and nothing the gate or verify relies
// on may come from the unsigned columns beside the body.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync } from 'node:fs';
import { join } from 'node:path';
import { cloakpipe, helperScript, makeHome, tempDir } from '../helpers/cli.js';
import { entries, files, session, tamper } from './session.js';

const verify = (home: string, ...extra: string[]) => cloakpipe(['verify', '--home', home, ...extra], { timeout: 120_000 });

test('a duplicate key put in front of a signed entry is tampering: SQLite reads the forged value, verify refuses', async () => {
  const home = makeHome();
  await session(home);
  assert.equal(verify(home).status, 0);
  const refused = entries(home).find((e) => e.kind === 'decision' && e.outcome === 'refuse');
  assert.ok(refused, 'the session has a refused decision');
  const forged = tamper(home, (db) => {
    db.prepare(`UPDATE entries SET body = '{"outcome":"allow",' || substr(body, 2) WHERE seq = ?`).run(refused.seq);
    // What any SQL reader now sees: the forged first value.
    return (db.prepare(`SELECT json_extract(body, '$.outcome') AS o FROM entries WHERE seq = ?`).get(refused.seq) as { o: string }).o;
  });
  assert.equal(forged, 'allow');
  const r = verify(home);
  assert.equal(r.status, 1, r.stdout + r.stderr);
  assert.match(r.stdout, new RegExp(`^ledger INVALID at seq ${refused.seq} \\(entry_not_canonical\\): entry is not strict JSON \\(duplicate_key\\)`));
  const json = JSON.parse(verify(home, '--json').stdout);
  assert.equal(json.failure.code, 'entry_not_canonical');
});

test('reordered keys or added whitespace in a stored body are tampering, though every value is unchanged', async () => {
  const home = makeHome();
  await session(home);
  const seq = entries(home)[1].seq;
  for (const edit of [
    // The same members, the last one moved to the front.
    `'{' || substr(body, instr(body, ',"v":1') + 1, length(body) - instr(body, ',"v":1') - 1) || ',' || substr(body, 2, instr(body, ',"v":1') - 2) || '}'`,
    `replace(body, ',', ', ')`,
  ]) {
    const before = tamper(home, (db) => {
      const b = (db.prepare('SELECT body FROM entries WHERE seq = ?').get(seq) as { body: string }).body;
      db.prepare(`UPDATE entries SET body = ${edit} WHERE seq = ?`).run(seq);
      const after = (db.prepare('SELECT body FROM entries WHERE seq = ?').get(seq) as { body: string }).body;
      assert.notEqual(after, b);
      assert.deepEqual(JSON.parse(after), JSON.parse(b), 'the edit keeps every value');
      return b;
    });
    const r = verify(home);
    assert.equal(r.status, 1, r.stdout);
    assert.match(r.stdout, new RegExp(`at seq ${seq} \\(entry_not_canonical\\)`));
    tamper(home, (db) => db.prepare('UPDATE entries SET body = ? WHERE seq = ?').run(before, seq));
    assert.equal(verify(home).status, 0);
  }
});

test("the chain head's time comes from its signed body, not the ts column (set to 2099 between sessions)", async () => {
  const home = makeHome();
  await session(home);
  tamper(home, (db) => db.prepare(`UPDATE entries SET ts = '2099-01-01T00:00:00.000Z', hash = 'sha256:' || hex(randomblob(32)) WHERE seq = (SELECT MAX(seq) FROM entries)`).run());
  await session(home);
  const all = entries(home);
  assert.ok(all.length >= 8);
  for (const e of all) assert.ok(e.ts < '2099', `entry ${e.seq} carries ${e.ts}`);
  // The signed chain holds; the edited row is named (verify-row-columns.test.ts).
  const r = verify(home);
  assert.equal(r.status, 1, r.stdout + r.stderr);
  assert.match(r.stdout, /\(row_edited\): the row of entry \d+ was edited outside the gate: its ts, hash columns differ from the signed entry/);
});

test('a gate does not start on a chain whose newest entry is not signed by its key, or not canonical', async () => {
  const home = makeHome();
  await session(home);
  const count = () => tamper(home, (db) => (db.prepare('SELECT COUNT(*) AS n FROM entries').get() as { n: number }).n);
  const before = count();
  for (const [edit, why] of [
    [`replace(body, '"kind":"shutdown"', '"kind":"shutdowm"')`, /newest ledger entry \(seq \d+\) is not signed by this home's gate key/],
    [`replace(body, '"kind":"shutdowm"', '"kind":"shutdown","x":1')`, /newest ledger entry is unreadable: entry is not in its RFC 8785 form/],
  ] as const) {
    tamper(home, (db) => db.prepare(`UPDATE entries SET body = ${edit} WHERE seq = (SELECT MAX(seq) FROM entries)`).run());
    const r = cloakpipe(['mcp-proxy', '--home', home, '--manifest', files()['m.yaml'], '--policy', files()['p.cedar'], '--', process.execPath, helperScript('upstream.js')], {
      input: '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"a","version":"1"}}}\n',
    });
    assert.equal(r.status, 2, r.stderr);
    assert.match(r.stderr, why);
    assert.equal(count(), before, 'nothing appended');
  }
});

test("verify --home without --public-key trusts the home's own gate.pub, and says so: a home rewritten whole under another key verifies against it", async () => {
  const home = makeHome();
  await session(home);
  const apart = join(tempDir(), 'gate.pub');
  copyFileSync(join(home, 'gate.pub'), apart);
  const honest = verify(home);
  assert.equal(honest.status, 0);
  assert.match(honest.stderr, /warning: checked against the home's own gate\.pub .*give --public-key PEM with a copy held apart/);
  const held = verify(home, '--public-key', apart);
  assert.equal(held.status, 0);
  assert.doesNotMatch(held.stderr, /warning/);
  // A forger who can write the home: another key, another gate.pub, another history.
  const forged = makeHome();
  await session(forged, 3);
  for (const f of ['gate.key', 'gate.pub', 'ledger.db', 'operations.db']) copyFileSync(join(forged, f), join(home, f));
  const fooled = verify(home);
  assert.equal(fooled.status, 0, 'against the gate.pub beside it, the forgery is consistent');
  assert.match(fooled.stderr, /warning: checked against the home's own gate\.pub/);
  const caught = verify(home, '--public-key', apart);
  assert.equal(caught.status, 1, caught.stdout);
});
