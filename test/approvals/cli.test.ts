// The approver's commands through the real binary: keygen, fingerprint, approve.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { createPublicKey, generateKeyPairSync } from 'node:crypto';
import { join } from 'node:path';
import { CLI, cloakpipe, tempDir } from '../helpers/cli.js';
import { fingerprintOf } from '../../src/core/call.js';
import { keyIdOf, loadPublicKey } from '../../src/ledger/keys.js';
import { verifyReceipt } from '../../src/approvals/receipt.js';
import { displayJson } from '../../src/cli/approve.js';

function keys() {
  const dir = tempDir();
  const r = cloakpipe(['keygen', '--out', join(dir, 'ann')]);
  assert.equal(r.status, 0, r.stderr);
  return { dir, key: join(dir, 'ann.key'), pub: join(dir, 'ann.pub'), stdout: r.stdout };
}

test('keygen: a 0600 private key and its public key, the key id printed, never overwritten', () => {
  const k = keys();
  assert.equal(statSync(k.key).mode & 0o777, 0o600);
  const pub = loadPublicKey(k.pub);
  assert.equal(k.stdout.split('\n')[0], keyIdOf(pub));
  assert.equal(keyIdOf(createPublicKey(readFileSync(k.key))), keyIdOf(pub));
  const before = readFileSync(k.key, 'utf8');
  const again = cloakpipe(['keygen', '--out', join(k.dir, 'ann')]);
  assert.equal(again.status, 2);
  assert.match(again.stderr, /never overwrites/);
  assert.equal(readFileSync(k.key, 'utf8'), before);
  assert.equal(cloakpipe(['keygen']).status, 2);
  assert.equal(cloakpipe(['keygen', '--help']).status, 0);
});

test('fingerprint: the gate fingerprint of a call file, with and without a task', () => {
  const dir = tempDir();
  const args = { to: 'a@example.com', n: 1.5, nested: { b: [1, 2], a: 'x' } };
  writeFileSync(join(dir, 'call.json'), JSON.stringify({ tool: 'send_email', arguments: args }));
  writeFileSync(join(dir, 'ctx.json'), JSON.stringify({ task: { id: 'T-9' } }));
  const r = cloakpipe(['fingerprint', '--call', join(dir, 'call.json'), '--context', join(dir, 'ctx.json')]);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout.trim(), fingerprintOf('send_email', args, 'T-9'));
  const j = cloakpipe(['fingerprint', '--call', join(dir, 'call.json'), '--json']);
  assert.deepEqual(JSON.parse(j.stdout), { fingerprint: fingerprintOf('send_email', args, null), tool: 'send_email', task: null });
  for (const bad of ['{"tool":"t","arguments":{},"extra":1}', '{"tool":"t","arguments":[]}', '{"tool":"","arguments":{}}', '{"tool":"t","tool":"u"}', 'nope']) {
    writeFileSync(join(dir, 'bad.json'), bad);
    assert.equal(cloakpipe(['fingerprint', '--call', join(dir, 'bad.json')]).status, 2, bad);
  }
  assert.equal(cloakpipe(['fingerprint']).status, 2);
  assert.equal(cloakpipe(['fingerprint', '--call', join(dir, 'missing.json')]).status, 2);
});

test('approve --fingerprint: a receipt the gate verifies; usage errors exit 2', () => {
  const k = keys();
  const fp = fingerprintOf('t', {}, null);
  const r = cloakpipe(['approve', '--key', k.key, '--fingerprint', fp, '--ttl', '10m']);
  assert.equal(r.status, 0, r.stderr);
  const receipt = JSON.parse(r.stdout);
  const pub = loadPublicKey(k.pub);
  const v = verifyReceipt(receipt, { fingerprint: fp, approvers: new Map([[keyIdOf(pub), pub]]), now: Date.now() });
  assert.ok(v.ok);
  assert.equal(Date.parse(receipt.expires_at) - Date.parse(receipt.issued_at), 600_000);

  const usage: string[][] = [
    ['--fingerprint', fp], // no key
    ['--key', k.key], // neither
    ['--key', k.key, '--fingerprint', fp, '--call', 'x.json'], // both
    ['--key', k.key, '--fingerprint', 'sha256:ABC'],
    ['--key', k.key, '--fingerprint', fp, '--ttl', '25h'],
    ['--key', k.key, '--fingerprint', fp, '--ttl', 'soon'],
    ['--key', k.key, '--fingerprint', fp, '--context', 'c.json'],
    ['--key', k.key, '--fingerprint', fp, '--out', 'a', '--home', 'b'],
    ['--key', k.pub, '--fingerprint', fp],
    ['--key', k.key, '--fingerprint', fp, '--bogus'],
  ];
  for (const a of usage) assert.equal(cloakpipe(['approve', ...a]).status, 2, a.join(' '));

  // A key others can read is refused.
  const loose = join(k.dir, 'loose.key');
  writeFileSync(loose, generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }));
  chmodSync(loose, 0o644);
  const l = cloakpipe(['approve', '--key', loose, '--fingerprint', fp]);
  assert.equal(l.status, 2);
  assert.match(l.stderr, /0600/);

  // --out is replaced whole, as every --out (test/cli/approve-out.test.ts).
  const out = join(k.dir, 'r.json');
  assert.equal(cloakpipe(['approve', '--key', k.key, '--fingerprint', fp, '--out', out]).status, 0);
  const first = readFileSync(out, 'utf8');
  assert.equal(cloakpipe(['approve', '--key', k.key, '--fingerprint', fp, '--out', out]).status, 0);
  assert.notEqual(readFileSync(out, 'utf8'), first);
});

const hasScript = spawnSync('script', ['--version']).status === 0;

// a@example.com, then tag characters a terminal draws as nothing, spelling " bcc".
const TAGGED = 'a@example.com\u{e0020}\u{e0062}\u{e0063}\u{e0063}';

test('approve --call on a terminal: shows the call (escaped) and signs only on y', { skip: !hasScript && 'no script(1)' }, () => {
  const k = keys();
  const call = join(k.dir, 'call.json');
  writeFileSync(call, JSON.stringify({ tool: 'send_email', arguments: { to: TAGGED, body: 'hi\u001b[2J\u202eevil' } }));
  const run = (answer: string, out: string) =>
    spawnSync('script', ['-qec', `${process.execPath} ${CLI} approve --key ${k.key} --call ${call} --out ${out}`, '/dev/null'], {
      input: answer + '\n',
      encoding: 'utf8',
      timeout: 30_000,
    });
  const no = run('n', join(k.dir, 'no.json'));
  assert.equal(no.status, 1, no.stdout);
  assert.ok(!existsSync(join(k.dir, 'no.json')));
  const yes = run('y', join(k.dir, 'yes.json'));
  assert.equal(yes.status, 0, yes.stdout);
  assert.match(yes.stdout, /send_email/);
  assert.match(yes.stdout, /a@example\.com/);
  assert.match(yes.stdout, /\\u001b\[2J\\u202eevil/, 'control and bidi characters are shown escaped');
  assert.match(yes.stdout, /"to": "a@example\.com\\u\{e0020\}\\u\{e0062\}\\u\{e0063\}\\u\{e0063\}"/, 'tag characters are shown escaped');
  assert.equal(JSON.parse(readFileSync(join(k.dir, 'yes.json'), 'utf8')).fingerprint, fingerprintOf('send_email', { to: TAGGED, body: 'hi\u001b[2J\u202eevil' }, null));
});

test('displayJson: every character a terminal draws as nothing or that moves others is shown escaped, two different values never look the same', () => {
  const hidden = [
    '\u007f', '\u0085', '\u009f', // DEL, C1 controls
    '\u00ad', '\u061c', '\u180e', '\u200b', '\u200d', '\u200e', '\u202e', '\u2066', '\ufeff', '\ufff9', // format: soft hyphen, bidi, zero-width
    '\u2028', '\u2029', // line and paragraph separators
    '\u034f', '\u115f', '\u3164', '\ufe0f', // combining grapheme joiner, Hangul fillers, a variation selector
    '\u{e0001}', '\u{e0041}', '\u{e007f}', '\u{e0100}', '\u{1d173}', // tags, a supplementary variation selector, invisible musical symbols
  ];
  for (const c of hidden) {
    const shown = displayJson({ to: `bob${c}@example.com` });
    assert.equal(/[^\x20-\x7e\n]/u.test(shown), false, `U+${c.codePointAt(0)!.toString(16)} is shown as it is: ${JSON.stringify(shown)}`);
    assert.notEqual(shown, displayJson({ to: 'bob@example.com' }));
  }
  // Visible text stays as it is, the indentation's line breaks too.
  assert.equal(displayJson({ to: 'zoë@example.com', note: 'a\nb' }), '{\n  "to": "zoë@example.com",\n  "note": "a\\nb"\n}');
});
