// The private key never leaves the token: after `cloakpipe init --key`, a process logged in to
// the token with the PIN (what a host compromise gets) still cannot read the key's value, wrap
// it out under a key of its own, or make it extractable; and the gate refuses to use a key that
// could leave the token. Attacks go through pkcs11js against a real SoftHSM2 token.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { verify } from 'node:crypto';
import { ed25519ph } from '@noble/curves/ed25519.js';
import { join } from 'node:path';
import type * as Pkcs11 from 'pkcs11js';
import { cloakpipe, tempDir } from '../helpers/cli.js';
import { freshToken, hsmSkip, SOFTHSM_MODULE, type Token } from '../helpers/softhsm.js';
import { Pkcs11Signer, TokenError } from '../../src/keys/pkcs11.js';
import { parsePkcs11Uri } from '../../src/keys/uri.js';
import { SignerUnavailable, keyIdOf } from '../../src/core/signer.js';
import { loadPublicKey } from '../../src/ledger/keys.js';
import { verifyReceipt } from '../../src/approvals/receipt.js';
import { existsSync, realpathSync } from 'node:fs';
import { SIGNING_THREAD } from '../../src/home/open.js';
import { chainSealer } from '../../src/ledger/seal.js';
import { sealAll } from '../helpers/seal.js';
import { GENESIS_PREV, parseStoredEntry, verifyEntrySignature } from '../../src/ledger/entry.js';

const pkcs = createRequire(import.meta.url)('pkcs11js') as typeof Pkcs11;

/** A logged-in session on the token, in this process (SOFTHSM2_CONF set for it). */
function attacker(t: Token) {
  process.env.SOFTHSM2_CONF = t.env.SOFTHSM2_CONF;
  const p = new pkcs.PKCS11();
  p.load(SOFTHSM_MODULE);
  p.C_Initialize();
  const slot = p.C_GetSlotList(true).find((s) => p.C_GetTokenInfo(s).label.trim() === t.label)!;
  const session = p.C_OpenSession(slot, pkcs.CKF_SERIAL_SESSION | pkcs.CKF_RW_SESSION);
  p.C_Login(session, pkcs.CKU_USER, t.pin);
  const find = (label: string): Buffer[] => {
    p.C_FindObjectsInit(session, [{ type: pkcs.CKA_CLASS, value: pkcs.CKO_PRIVATE_KEY }, { type: pkcs.CKA_LABEL, value: label }]);
    const found = p.C_FindObjects(session, 10);
    p.C_FindObjectsFinal(session);
    return found;
  };
  return { p, session, find, close: () => p.C_Finalize() };
}

const ckr = (name: string) => (e: unknown) => String((e as Error).message).includes(name);

test('the gate key made by init cannot be read, wrapped out or made extractable', hsmSkip, () => {
  const t = freshToken();
  const r = cloakpipe(['init', '--home', join(tempDir(), 'home'), '--key', t.uri(), '--pin-file', t.pinFile], { env: { ...process.env, ...t.env } });
  assert.equal(r.status, 0, r.stderr);
  const a = attacker(t);
  try {
    const [key] = a.find('gate');
    assert.ok(key, 'the key is in the token');
    const attrs = a.p
      .C_GetAttributeValue(a.session, key, [{ type: pkcs.CKA_SENSITIVE }, { type: pkcs.CKA_EXTRACTABLE }, { type: pkcs.CKA_ALWAYS_SENSITIVE }, { type: pkcs.CKA_NEVER_EXTRACTABLE }, { type: pkcs.CKA_TOKEN }])
      .map((x) => (x.value as Buffer)[0]);
    assert.deepEqual(attrs, [1, 0, 1, 1, 1], 'sensitive, not extractable, always sensitive, never extractable, a token object');
    // Read the private value.
    assert.throws(() => a.p.C_GetAttributeValue(a.session, key, [{ type: pkcs.CKA_VALUE }]), ckr('CKR_ATTRIBUTE_SENSITIVE'));
    // Wrap it out under an AES key the attacker holds.
    const wrapping = a.p.C_GenerateKey(a.session, { mechanism: pkcs.CKM_AES_KEY_GEN }, [
      { type: pkcs.CKA_VALUE_LEN, value: 32 },
      { type: pkcs.CKA_WRAP, value: true },
      { type: pkcs.CKA_TOKEN, value: false },
      { type: pkcs.CKA_EXTRACTABLE, value: true },
    ]);
    for (const mechanism of [pkcs.CKM_AES_KEY_WRAP_PAD, pkcs.CKM_AES_KEY_WRAP, pkcs.CKM_AES_CBC_PAD])
      assert.throws(
        () => a.p.C_WrapKey(a.session, { mechanism, ...(mechanism === pkcs.CKM_AES_CBC_PAD ? { parameter: Buffer.alloc(16) } : {}) }, wrapping, key, Buffer.alloc(4096)),
        (e: unknown) => /CKR_KEY_UNEXTRACTABLE|CKR_KEY_NOT_WRAPPABLE|CKR_MECHANISM_INVALID/.test(String((e as Error).message)),
        `wrap with mechanism ${mechanism}`,
      );
    // Flip it to extractable or not sensitive.
    assert.throws(() => a.p.C_SetAttributeValue(a.session, key, [{ type: pkcs.CKA_EXTRACTABLE, value: true }]), /CKR_ATTRIBUTE_READ_ONLY|CKR_ATTRIBUTE_VALUE_INVALID/);
    assert.throws(() => a.p.C_SetAttributeValue(a.session, key, [{ type: pkcs.CKA_SENSITIVE, value: false }]), /CKR_ATTRIBUTE_READ_ONLY|CKR_ATTRIBUTE_VALUE_INVALID/);
    // Copy it into an extractable object.
    assert.throws(() => a.p.C_CopyObject(a.session, key, [{ type: pkcs.CKA_EXTRACTABLE, value: true }]), /CKR_ATTRIBUTE_READ_ONLY|CKR_TEMPLATE_INCONSISTENT|CKR_ATTRIBUTE_VALUE_INVALID/);
  } finally {
    a.close();
  }
});

test('a key that can leave the token is refused by the gate (exit 2, named)', hsmSkip, () => {
  const t = freshToken();
  const a = attacker(t);
  try {
    const label = (l: string) => [{ type: pkcs.CKA_LABEL, value: l }];
    a.p.C_GenerateKeyPair(
      a.session,
      { mechanism: 0x1055 },
      [...label('loose'), { type: pkcs.CKA_TOKEN, value: true }, { type: pkcs.CKA_VERIFY, value: true }, { type: pkcs.CKA_EC_PARAMS, value: Buffer.from('06032b6570', 'hex') }],
      [...label('loose'), { type: pkcs.CKA_TOKEN, value: true }, { type: pkcs.CKA_SIGN, value: true }, { type: pkcs.CKA_PRIVATE, value: true }, { type: pkcs.CKA_SENSITIVE, value: false }, { type: pkcs.CKA_EXTRACTABLE, value: true }],
    );
  } finally {
    a.close();
  }
  const r = cloakpipe(['init', '--home', join(tempDir(), 'home'), '--key', t.uri('loose'), '--pin-file', t.pinFile], { env: { ...process.env, ...t.env } });
  assert.equal(r.status, 2, r.stderr);
  assert.match(r.stderr, /can leave the token .*refused/);
});

test('Pkcs11Signer: signs Ed25519 that node verifies; reports whether the token really does Ed25519ph', hsmSkip, () => {
  const t = freshToken();
  process.env.SOFTHSM2_CONF = t.env.SOFTHSM2_CONF;
  const s = Pkcs11Signer.open({ uri: parsePkcs11Uri(t.uri()), pin: t.pin, create: true });
  try {
    assert.equal(s.created, true);
    assert.equal(s.publicKey.asymmetricKeyType, 'ed25519');
    const msg = Buffer.from('an entry');
    assert.ok(verify(null, msg, s.publicKey, s.sign(msg)));
    // SoftHSM 2.6 ignores CK_EDDSA_PARAMS and signs pure Ed25519: the probe must notice, so no
    // pure signature is ever sent to Rekor as Ed25519ph.
    const ph = s.signPrehashed(msg);
    if (ph !== null) assert.ok(ed25519ph.verify(ph, msg, Buffer.from(s.publicKey.export({ format: 'jwk' }).x!, 'base64url')));
    assert.equal(s.prehash, ph !== null);
  } finally {
    s.close();
  }
  assert.throws(() => s.sign(Buffer.from('x')), SignerUnavailable, 'a closed signer does not sign');
  assert.throws(() => Pkcs11Signer.open({ uri: parsePkcs11Uri(t.uri()), pin: 'nope' }), (e: unknown) => e instanceof TokenError && /refused the PIN/.test(e.message));
});

test('an approver key in a token: keygen --key makes it there, approve --key signs a receipt the gate verifies', hsmSkip, () => {
  const t = freshToken();
  const env = { ...process.env, ...t.env };
  const prefix = join(tempDir(), 'alice');
  const kg = cloakpipe(['keygen', '--key', t.uri('alice'), '--pin-file', t.pinFile, '--out', prefix, '--json'], { env });
  assert.equal(kg.status, 0, kg.stderr);
  assert.equal(JSON.parse(kg.stdout).generated, true);
  assert.ok(!existsSync(`${prefix}.key`), 'no private key file');
  const fp = `sha256:${'5a'.repeat(32)}` as const;
  const ap = cloakpipe(['approve', '--key', t.uri('alice'), '--pin-file', t.pinFile, '--fingerprint', fp], { env });
  assert.equal(ap.status, 0, ap.stderr);
  const pub = loadPublicKey(`${prefix}.pub`);
  const v = verifyReceipt(JSON.parse(ap.stdout), { fingerprint: fp, approvers: new Map([[keyIdOf(pub), pub]]), now: Date.now() });
  assert.ok(v.ok, JSON.stringify(v));
  const wrongPin = cloakpipe(['approve', '--key', t.uri('alice'), '--fingerprint', fp], { env: { ...env, CLOAKPIPE_PKCS11_PIN: 'nope' } });
  assert.equal(wrongPin.status, 2);
  assert.match(wrongPin.stderr, /approver key: token "cloakpipe" refused the PIN/);
});

test('a token lent to the signing thread while this thread signs too (a group sealed while an anchor is signed): all verify', hsmSkip, async () => {
  const t = freshToken();
  process.env.SOFTHSM2_CONF = t.env.SOFTHSM2_CONF;
  const s = Pkcs11Signer.open({ uri: parsePkcs11Uri(t.uri()), pin: t.pin, create: true });
  const sealer = chainSealer(s, { thread: SIGNING_THREAD })!;
  const body = (i: number) => ({ v: 1 as const, seq: i, ts: '2026-12-01T00:00:00.000Z', prev: '', kind: 'decision', n: i });
  const run = (from: number) => Array.from({ length: 20 }, (_, i) => body(from + i));
  try {
    const runs = Promise.all([0, 20, 40].map((from) => sealAll(sealer, GENESIS_PREV, run(from))));
    // While the signing thread signs in the lent session, this thread signs in the other one.
    const msgs = Array.from({ length: 40 }, (_, i) => Buffer.from(`anchor ${i}`));
    const inline = msgs.map((m) => s.sign(m));
    for (const sealed of await runs) for (const x of sealed) assert.ok(verifyEntrySignature(parseStoredEntry(x.stored), s.publicKey));
    msgs.forEach((m, i) => assert.ok(verify(null, m, s.publicKey, inline[i]), `inline signature ${i}`));
    // The token goes away under the signing thread: the run fails (fail closed); it resumes after.
    t.remove();
    await assert.rejects(sealAll(sealer, GENESIS_PREV, run(0)), SignerUnavailable);
    t.restore();
    const [again] = await sealAll(sealer, GENESIS_PREV, run(0));
    assert.ok(verifyEntrySignature(parseStoredEntry(again.stored), s.publicKey));
  } finally {
    sealer.close();
    s.close();
  }
});

// The inbox holds two token keys in one process (the gate key and an approver key, ADR 061): the
// module's C_Initialize and C_Finalize are the process's, so one signer closing or reconnecting
// must not leave the other with dead, or worse reused, session and object handles.
test('two keys in two tokens of one module: closing or reconnecting one never breaks or crosses the other', hsmSkip, async () => {
  const gateToken = freshToken();
  const approverToken = freshToken('approver', gateToken);
  process.env.SOFTHSM2_CONF = gateToken.env.SOFTHSM2_CONF;
  // The approver's URI names the module through its real path, the gate's perhaps through a symlink (Debian's): one library.
  const open = (t: Token, object: string, real = false) =>
    Pkcs11Signer.open({ uri: parsePkcs11Uri(real ? t.uri(object).replace(SOFTHSM_MODULE, realpathSync(SOFTHSM_MODULE)) : t.uri(object)), pin: t.pin, create: true });
  const signs = (s: Pkcs11Signer, what: string) => {
    const m = Buffer.from(`${what} ${Math.random()}`);
    assert.ok(verify(null, m, s.publicKey, s.sign(m)), `${what}: signed with its own key`);
  };
  const a = open(gateToken, 'gate');
  const b = open(approverToken, 'alice', true);
  let c: Pkcs11Signer | undefined;
  try {
    assert.notEqual(a.keyId, b.keyId);
    signs(a, 'gate');
    signs(b, 'approver');
    // Both tokens away, then back: each signer reconnects; neither finalizes the module under the other.
    gateToken.remove();
    assert.throws(() => a.sign(Buffer.from('x')), SignerUnavailable);
    assert.throws(() => b.sign(Buffer.from('x')), SignerUnavailable);
    gateToken.restore();
    for (let i = 0; i < 3; i++) {
      signs(a, `gate after the token came back, ${i}`);
      signs(b, `approver after the token came back, ${i}`);
    }
    // Nothing finalises the module while another signer's session is lent to a signing thread.
    gateToken.remove();
    assert.throws(() => b.sign(Buffer.from('x')), SignerUnavailable);
    gateToken.restore();
    let give!: () => void;
    const held = a.lendToThread(() => new Promise<void>((r) => (give = r)));
    await new Promise((r) => setImmediate(r));
    assert.throws(() => b.sign(Buffer.from('x')), /a signature the token began has not returned yet/, 'no C_Finalize under a running C_Sign');
    give();
    await held;
    signs(b, 'approver once the loan is back');
    signs(a, 'gate once the loan is back');
    // A third signer opened and closed: the others keep signing.
    c = open(approverToken, 'bob');
    signs(c, 'bob');
    c.close();
    signs(a, 'gate after another signer closed');
    signs(b, 'approver after another signer closed');
  } finally {
    c?.close();
    b.close();
    a.close();
  }
});
