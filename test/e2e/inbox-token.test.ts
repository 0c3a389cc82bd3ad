// The approval inbox with its keys in PKCS#11 tokens (keys.md, ADR 061), in real SoftHSM2 tokens:
// the home's gate key in one, the approver's key in another of the same module, each with its own
// PIN. A call refused approval_required by the real gate is approved through the inbox over HTTP:
// the receipt, signed in the approver's token, verifies with the approver's public key and the
// gate takes the identical retry once; the inbox's operator entries, signed in the gate's token,
// verify with gate.pub. With the tokens away an approval fails and decides nothing; back, it works.
// The private keys stay in the tokens; a wrong PIN (either key's) is exit 2, named; no PIN is printed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import type * as Pkcs11 from 'pkcs11js';
import { cloakpipe, tempDir } from '../helpers/cli.js';
import { freshToken, hsmSkip, SOFTHSM_MODULE, type Token } from '../helpers/softhsm.js';
import { inboxClient, startInbox } from '../helpers/inbox-server.js';
import { call, ledger, records, setup, startGate } from '../helpers/recording-gate.js';
import { verifyReceipt } from '../../src/approvals/receipt.js';
import { loadPublicKey } from '../../src/ledger/keys.js';
import { keyIdOf } from '../../src/core/signer.js';

const pkcs = createRequire(import.meta.url)('pkcs11js') as typeof Pkcs11;

/** Two tokens of one SoftHSM: the gate's (label cloakpipe) and the approver's, with other PINs. */
function tokens(): { gate: Token; approver: Token } {
  const gate = freshToken();
  const approver = freshToken('approver', gate);
  assert.notEqual(gate.pin, approver.pin);
  // The gate, the inbox and keygen are children of this process: they find the tokens here.
  process.env.SOFTHSM2_CONF = gate.env.SOFTHSM2_CONF;
  delete process.env.CLOAKPIPE_PKCS11_PIN;
  return { gate, approver };
}

/** A home whose gate key is generated in the gate's token, and the approver "alice" in hers. */
function tokenSetup() {
  const t = tokens();
  const s = setup();
  const home = join(tempDir(), 'home');
  const init = cloakpipe(['init', '--home', home, '--key', t.gate.uri(), '--pin-file', t.gate.pinFile]);
  assert.equal(init.status, 0, init.stderr);
  const prefix = join(s.dir, 'alice');
  const kg = cloakpipe(['keygen', '--key', t.approver.uri('alice'), '--pin-file', t.approver.pinFile, '--out', prefix, '--json']);
  assert.equal(kg.status, 0, kg.stderr);
  assert.ok(!existsSync(`${prefix}.key`), 'no private key file for a token key');
  return { ...t, s: { ...s, home }, alicePub: `${prefix}.pub` };
}

/** The receipts the inbox offered for a fingerprint, from the operations store. */
function offered(home: string, fingerprint: string): string[] {
  const db = new Database(join(home, 'operations.db'), { readonly: true });
  try {
    return (db.prepare('SELECT receipt FROM offered_receipts WHERE fingerprint = ?').all(fingerprint) as { receipt: string }[]).map((r) => r.receipt);
  } finally {
    db.close();
  }
}

test('approved through the inbox with the approver key in a token: the receipt verifies, the gate takes it once, the entries verify', hsmSkip, async () => {
  const { gate: gt, approver: at, s, alicePub } = tokenSetup();
  const g = await startGate(s, { approvers: [alicePub], flags: ['--key', gt.uri(), '--pin-file', gt.pinFile] });
  const inbox = await startInbox({
    home: s.home,
    approverKey: at.uri('alice'),
    flags: ['--approver-pin-file', at.pinFile, '--key', gt.uri(), '--pin-file', gt.pinFile],
  });
  try {
    const args = { to: 'token-approve@example.com', body: 'signed in a token' };
    const refused = await call(g, 'send_email', args);
    assert.ok(!refused.ok && refused.reason === 'approval_required', JSON.stringify(refused));
    const fingerprint = refused.data.fingerprint as `sha256:${string}`;
    const api = await inboxClient(inbox);
    const session = JSON.parse((await api('/api/session')).body) as { approver: { key_id: string; name: string } };
    assert.deepEqual(session.approver, { key_id: keyIdOf(loadPublicKey(alicePub)), name: 'alice in token approver' }, 'the page says whose key signs');
    const listed = JSON.parse((await api('/api/requests')).body) as { requests: { id: string; arguments: { to: string } }[] };
    const r = listed.requests.find((x) => x.arguments.to === args.to)!;
    assert.ok(r, JSON.stringify(listed));

    // The tokens away: the approval fails closed (nothing decided, no receipt, no entry); back, it works.
    const operators = () => ledger(s).filter((e) => e.kind === 'operator').length;
    gt.remove();
    try {
      const away = await api(`/api/requests/${r.id}/approve`, 'POST');
      assert.equal(away.status, 503, away.body);
      assert.match(away.body, /signing key is unavailable.*nothing was decided/);
    } finally {
      gt.restore();
    }
    assert.match(inbox.stderr(), /the approver key cannot sign until the token is back/);
    assert.equal((await api(`/api/requests/${r.id}`)).status, 200, 'the request still waits');
    assert.deepEqual(offered(s.home, fingerprint), [], 'no receipt');
    assert.equal(operators(), 0, 'no operator entry');

    const approved = await api(`/api/requests/${r.id}/approve`, 'POST');
    assert.equal(approved.status, 200, approved.body);
    assert.match(inbox.stderr(), /signing resumed/);
    const [stored, ...more] = offered(s.home, fingerprint);
    assert.equal(more.length, 0);
    const pub = loadPublicKey(alicePub);
    const v = verifyReceipt(JSON.parse(stored), { fingerprint, approvers: new Map([[keyIdOf(pub), pub]]), now: Date.now() });
    assert.ok(v.ok, JSON.stringify(v));
    assert.equal(v.id, (JSON.parse(approved.body) as { receipt: string }).receipt);

    const ok = await call(g, 'send_email', args);
    assert.ok(ok.ok, JSON.stringify(ok));
    const used = await call(g, 'send_email', args);
    assert.ok(!used.ok && used.reason === 'approval_invalid' && /^already_used/.test(used.detail), JSON.stringify(used));
    assert.equal(records(s).filter((x) => x.arguments.to === args.to).length, 1, 'ran once');

    const other = { to: 'token-deny@example.com' };
    const refusedToo = await call(g, 'send_email', other);
    assert.ok(!refusedToo.ok);
    const d = (JSON.parse((await api('/api/requests')).body) as { requests: { id: string; arguments: { to: string } }[] }).requests.find((x) => x.arguments.to === other.to)!;
    assert.equal((await api(`/api/requests/${d.id}/deny`, 'POST')).status, 200);

    const entries = ledger(s);
    const ops = entries.filter((e) => e.kind === 'operator').map((e) => [e.action, e.approver]);
    assert.deepEqual(ops, [['approve', keyIdOf(pub)], ['deny', keyIdOf(pub)]]);
    const allowed = entries.find((e) => e.kind === 'decision' && e.outcome === 'allow' && e.tool === 'send_email');
    assert.equal(allowed?.receipt, v.id, 'the gate used the receipt signed in the token');
  } finally {
    await inbox.stop();
    await g.close();
  }
  // Every entry, the inbox's operator entries too, verifies with the public key the home holds.
  const verify = cloakpipe(['verify', '--home', s.home]);
  assert.equal(verify.status, 0, verify.stdout + verify.stderr);
  // No private key and no PIN in the home, the answers or the logs.
  for (const name of readdirSync(s.home)) {
    const p = join(s.home, name);
    if (!statSync(p).isFile()) continue;
    const bytes = readFileSync(p);
    assert.ok(!bytes.includes('PRIVATE KEY'), `${name} holds no private key`);
    assert.ok(!bytes.includes(gt.pin) && !bytes.includes(at.pin), `${name} holds no PIN`);
  }
  for (const text of [inbox.stderr(), g.stderr()]) assert.ok(!text.includes(gt.pin) && !text.includes(at.pin) && !text.includes('PRIVATE KEY'));
});

/** A logged-in session on a token in this process (what a host compromise gets: the PIN). */
function attacker(t: Token) {
  const p = new pkcs.PKCS11();
  p.load(SOFTHSM_MODULE);
  p.C_Initialize();
  const slot = p.C_GetSlotList(true).find((x) => p.C_GetTokenInfo(x).label.trim() === t.label)!;
  const session = p.C_OpenSession(slot, pkcs.CKF_SERIAL_SESSION | pkcs.CKF_RW_SESSION);
  p.C_Login(session, pkcs.CKU_USER, t.pin);
  return { p, session, close: () => p.C_Finalize() };
}

test('inbox serve with token keys refuses at start, exit 2, named, no PIN printed: wrong PINs, a key that can leave its token, another key than the home\'s', hsmSkip, () => {
  const { gate: gt, approver: at, s } = tokenSetup();
  const a = attacker(at);
  try {
    // alice, made by keygen --key, cannot leave her token; "loose" could, so the inbox refuses it.
    const [alice] = (() => {
      a.p.C_FindObjectsInit(a.session, [{ type: pkcs.CKA_CLASS, value: pkcs.CKO_PRIVATE_KEY }, { type: pkcs.CKA_LABEL, value: 'alice' }]);
      const found = a.p.C_FindObjects(a.session, 2);
      a.p.C_FindObjectsFinal(a.session);
      return found;
    })();
    const attrs = a.p.C_GetAttributeValue(a.session, alice, [{ type: pkcs.CKA_SENSITIVE }, { type: pkcs.CKA_EXTRACTABLE }, { type: pkcs.CKA_NEVER_EXTRACTABLE }]).map((x) => (x.value as Buffer)[0]);
    assert.deepEqual(attrs, [1, 0, 1], 'sensitive, not extractable, never extractable');
    assert.throws(() => a.p.C_GetAttributeValue(a.session, alice, [{ type: pkcs.CKA_VALUE }]), /CKR_ATTRIBUTE_SENSITIVE/);
    const label = [{ type: pkcs.CKA_LABEL, value: 'loose' }];
    a.p.C_GenerateKeyPair(
      a.session,
      { mechanism: 0x1055 },
      [...label, { type: pkcs.CKA_TOKEN, value: true }, { type: pkcs.CKA_VERIFY, value: true }, { type: pkcs.CKA_EC_PARAMS, value: Buffer.from('06032b6570', 'hex') }],
      [...label, { type: pkcs.CKA_TOKEN, value: true }, { type: pkcs.CKA_SIGN, value: true }, { type: pkcs.CKA_PRIVATE, value: true }, { type: pkcs.CKA_SENSITIVE, value: false }, { type: pkcs.CKA_EXTRACTABLE, value: true }],
    );
  } finally {
    a.close();
  }
  const dir = tempDir();
  const wrongPin = join(dir, 'wrong-pin');
  writeFileSync(wrongPin, 'wrong-4711\n', { mode: 0o600 });
  const loosePin = join(dir, 'loose-pin');
  writeFileSync(loosePin, at.pin + '\n', { mode: 0o644 });
  const gateFlags = ['--key', gt.uri(), '--pin-file', gt.pinFile];
  const cases: [string, string, string[], Record<string, string>, RegExp][] = [
    ['a wrong approver PIN file', at.uri('alice'), ['--approver-pin-file', wrongPin, ...gateFlags], {}, /approver key: token "approver" refused the PIN \(CKR_PIN_INCORRECT\)/],
    ['a wrong approver PIN in the environment', at.uri('alice'), gateFlags, { CLOAKPIPE_PKCS11_PIN: 'wrong-4711' }, /approver key: token "approver" refused the PIN \(CKR_PIN_INCORRECT\)/],
    ['no approver PIN', at.uri('alice'), gateFlags, {}, /approver key: the token needs a PIN: --approver-pin-file FILE or CLOAKPIPE_PKCS11_PIN/],
    ['a wrong gate key PIN', at.uri('alice'), ['--approver-pin-file', at.pinFile, '--key', gt.uri(), '--pin-file', wrongPin], {}, /gate key: token "cloakpipe" refused the PIN \(CKR_PIN_INCORRECT\)/],
    ['the gate key PIN from the environment, wrong', at.uri('alice'), ['--approver-pin-file', at.pinFile], { CLOAKPIPE_PKCS11_PIN: 'wrong-4711' }, /gate key: token "cloakpipe" refused the PIN \(CKR_PIN_INCORRECT\)/],
    ['an approver PIN file others can read', at.uri('alice'), ['--approver-pin-file', loosePin, ...gateFlags], {}, /PIN file .* is readable by others/],
    ['--approver-pin-file with a key file', s.approverKey, ['--approver-pin-file', at.pinFile, ...gateFlags], {}, /--approver-pin-file goes with --approver-key pkcs11:/],
    ['no such approver key', at.uri('nobody'), ['--approver-pin-file', at.pinFile, ...gateFlags], {}, /holds no Ed25519 private key object="nobody" \(cloakpipe keygen --key … creates one\)/],
    ['an approver key that can leave its token', at.uri('loose'), ['--approver-pin-file', at.pinFile, ...gateFlags], {}, /the key object="loose" in token "approver" can leave the token .*refused/],
    ["a token key that is not the home's gate key", at.uri('alice'), ['--approver-pin-file', at.pinFile, '--key', at.uri('alice'), '--pin-file', at.pinFile], {}, /is not this home's gate key/],
  ];
  for (const [name, approverKey, flags, env, why] of cases) {
    const r = cloakpipe(['inbox', 'serve', '--home', s.home, '--listen', '127.0.0.1:0', '--approver-key', approverKey, ...flags], { env: { ...process.env, ...env }, timeout: 20_000 });
    assert.equal(r.status, 2, `${name}: ${r.stderr}`);
    assert.match(r.stderr, why, name);
    assert.doesNotMatch(r.stderr, /serving/, `${name}: nothing listens`);
    for (const pin of [gt.pin, at.pin, 'wrong-4711']) assert.ok(!(r.stdout + r.stderr).includes(pin), `${name}: no PIN printed`);
  }
});
