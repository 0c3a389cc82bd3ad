// The gate key in a PKCS#11 token (keys.md), with a real SoftHSM2 token, the real binary and
// the official SDK client in front of @modelcontextprotocol/server-memory:
// - a whole gated session signed by the token verifies with the public key alone;
// - the home never holds a private key;
// - the token removed mid-run: every call is fail_closed and nothing reaches the server; put
//   back, signing resumes and the chain still verifies;
// - a module, token, PIN or key missing at start: exit 2, named, the upstream never spawned.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { createPublicKey, generateKeyPairSync } from 'node:crypto';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { CLI, MEMORY, PERMIT_ALL, cloakpipe, tempDir, writeFiles } from '../helpers/cli.js';
import { startFakeRekor } from '../helpers/fake-rekor.js';
import { startGate } from '../helpers/gate.js';
import { freshToken, hsmSkip, type Token } from '../helpers/softhsm.js';
import { PG_URL, dropSchema, freshSchema, pgSkip } from '../store/postgres/pg.js';
import { keyIdOf } from '../../src/core/signer.js';

const MANIFEST = `version: 1
release: hsm-test@1
tools:
  create_entities:
    effect: write
    arguments:
      entities: { type: array, max_items: 5, required: true, items: { type: object } }
  read_graph:
    effect: read
    arguments: {}
`;

function tokenHome(t: Token, how: 'pin-file' | 'env' = 'pin-file'): string {
  const home = join(tempDir(), 'home');
  const args = ['init', '--home', home, '--key', t.uri(), ...(how === 'pin-file' ? ['--pin-file', t.pinFile] : [])];
  const r = cloakpipe(args, { env: { ...process.env, ...t.env, ...(how === 'env' ? { CLOAKPIPE_PKCS11_PIN: t.pin } : {}) } });
  assert.equal(r.status, 0, r.stderr);
  return home;
}

function entity(name: string) {
  return { entities: [{ name, entityType: 'note', observations: [] }] };
}

async function gate(t: Token, home: string, flags: string[] = []) {
  const f = writeFiles({ 'm.yaml': MANIFEST, 'p.cedar': PERMIT_ALL });
  return startGate({
    home,
    manifest: f['m.yaml'],
    policy: f['p.cedar'],
    flags,
    upstream: [process.execPath, MEMORY],
    env: { ...t.env, CLOAKPIPE_PKCS11_PIN: t.pin, MEMORY_FILE_PATH: join(tempDir(), 'memory.jsonl') },
  });
}

/** `cloakpipe verify` of an exported ledger with nothing but the public key. */
function verifyWithPublicKeyOnly(home: string): { status: number | null; out: string } {
  const auditor = tempDir('cloakpipe-auditor-');
  const exported = join(auditor, 'ledger.jsonl');
  const ex = cloakpipe(['ledger', 'export', '--home', home, '--out', exported]);
  assert.equal(ex.status, 0, ex.stderr);
  copyFileSync(join(home, 'gate.pub'), join(auditor, 'gate.pub'));
  const v = cloakpipe(['verify', '--ledger', exported, '--public-key', join(auditor, 'gate.pub'), '--json'], { env: { PATH: process.env.PATH ?? '' } });
  return { status: v.status, out: v.stdout + v.stderr };
}

test('init --key: the pair is generated in the token; the home holds its URI and public key, no private key', hsmSkip, () => {
  const t = freshToken();
  const home = tokenHome(t);
  assert.ok(!existsSync(join(home, 'gate.key')), 'no gate.key in the home');
  assert.equal(readFileSync(join(home, 'gate.token'), 'utf8').trim(), t.uri());
  for (const name of readdirSync(home)) {
    if (name === 'approvals') continue;
    const bytes = readFileSync(join(home, name));
    assert.ok(!bytes.includes('PRIVATE KEY'), `${name} holds no private key`);
    assert.ok(!bytes.includes(t.pin), `${name} holds no PIN`);
  }
  // A second home on the same token finds the same key (never a second pair under the label).
  const again = tokenHome(t, 'env');
  assert.equal(readFileSync(join(again, 'gate.pub'), 'utf8'), readFileSync(join(home, 'gate.pub'), 'utf8'));
});

test('a gated session signed in SoftHSM verifies with the public key alone', hsmSkip, async () => {
  const t = freshToken();
  const home = tokenHome(t);
  const g = await gate(t, home, ['--key', t.uri(), '--pin-file', t.pinFile]);
  try {
    assert.ok(!(await g.client.callTool({ name: 'create_entities', arguments: entity('Ada') })).isError);
    await assert.rejects(g.client.callTool({ name: 'delete_entities', arguments: { entityNames: ['Ada'] } }), (e: unknown) => e instanceof McpError && (e.data as { reason?: string }).reason === 'undeclared_tool');
    const graph = await g.client.callTool({ name: 'read_graph', arguments: {} });
    assert.ok(JSON.stringify(graph).includes('Ada'));
  } finally {
    await g.close();
  }
  const v = verifyWithPublicKeyOnly(home);
  assert.equal(v.status, 0, v.out);
  const report = JSON.parse(v.out);
  assert.equal(report.ok, true);
  // The startup entry names the token's key: the key id of the public key the home recorded.
  const show = cloakpipe(['ledger', 'show', '--home', home, '--json']);
  const startup = show.stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l)).find((e) => e.kind === 'startup');
  assert.equal(startup.gate_key, keyIdOf(createPublicKey(readFileSync(join(home, 'gate.pub')))));
  // The home records the URI: a gate started without --key signs through the same token.
  const again = await gate(t, home);
  try {
    assert.ok(!(await again.client.callTool({ name: 'read_graph', arguments: {} })).isError);
  } finally {
    await again.close();
  }
  assert.equal(verifyWithPublicKeyOnly(home).status, 0);
});

test('the token removed mid-run: calls are fail_closed, nothing is forwarded; put back, signing resumes', hsmSkip, async () => {
  const t = freshToken();
  const home = tokenHome(t);
  const g = await gate(t, home);
  try {
    assert.ok(!(await g.client.callTool({ name: 'create_entities', arguments: entity('Before') })).isError);
    t.remove();
    for (const name of ['During', 'StillGone']) {
      await assert.rejects(
        g.client.callTool({ name: 'create_entities', arguments: entity(name) }),
        (e: unknown) => e instanceof McpError && (e.data as { reason?: string }).reason === 'fail_closed',
        `${name} must be refused`,
      );
    }
    assert.match(g.stderr(), /cannot sign|unavailable/);
    t.restore();
    assert.ok(!(await g.client.callTool({ name: 'create_entities', arguments: entity('After') })).isError, 'signing resumed');
    const graph = JSON.stringify(await g.client.callTool({ name: 'read_graph', arguments: {} }));
    assert.ok(graph.includes('Before') && graph.includes('After'));
    assert.ok(!graph.includes('During') && !graph.includes('StillGone'), 'nothing reached the server while the token was away');
    assert.match(g.stderr(), /signing resumed/);
  } finally {
    await g.close();
  }
  const v = verifyWithPublicKeyOnly(home);
  assert.equal(v.status, 0, v.out);
});

function start(t: Token, home: string, flags: string[], env: Record<string, string | undefined>) {
  const marker = join(tempDir(), 'spawned');
  const f = writeFiles({ 'm.yaml': MANIFEST, 'p.cedar': PERMIT_ALL });
  const r = cloakpipe(['mcp-proxy', '--home', home, '--manifest', f['m.yaml'], '--policy', f['p.cedar'], ...flags, '--', 'sh', '-c', 'touch "$0"; cat >/dev/null', marker], {
    input: '',
    env: { ...process.env, ...t.env, CLOAKPIPE_PKCS11_PIN: undefined, ...env },
  });
  return { ...r, spawned: existsSync(marker) };
}

test('module, token, PIN or key unavailable at start: exit 2, named, nothing spawned', hsmSkip, () => {
  const t = freshToken();
  const home = tokenHome(t);
  const other = freshToken('elsewhere');
  const pin = { CLOAKPIPE_PKCS11_PIN: t.pin };
  const cases: [string, string[], Record<string, string | undefined>, RegExp][] = [
    ['a module that does not load', ['--key', t.uri().replace(/module-path=.*/, 'module-path=/nonexistent/libpkcs11.so')], pin, /PKCS#11 module \/nonexistent\/libpkcs11\.so cannot be loaded/],
    ['no such token', ['--key', t.uri().replace('token=cloakpipe', 'token=absent')], pin, /no token "absent"/],
    ['the token gone', [], { ...pin, SOFTHSM2_CONF: other.env.SOFTHSM2_CONF }, /no token "cloakpipe"/],
    ['no PIN', [], {}, /needs a PIN: --pin-file FILE or CLOAKPIPE_PKCS11_PIN/],
    ['a wrong PIN', [], { CLOAKPIPE_PKCS11_PIN: 'wrong-pin' }, /refused the PIN \(CKR_PIN_INCORRECT\)/],
    ['no such key', ['--key', t.uri('absent')], pin, /holds no Ed25519 private key object="absent"/],
    ['a PIN in the URI', ['--key', t.uri() + '&pin-value=1234'], pin, /pin-value is refused/],
    ['another token key than the home\'s', ['--key', t.uri('other')], pin, /holds no Ed25519 private key object="other"/],
  ];
  for (const [name, flags, env, message] of cases) {
    const r = start(t, home, flags, env);
    assert.equal(r.status, 2, `${name}: ${r.stderr}`);
    assert.match(r.stderr, message, name);
    assert.equal(r.spawned, false, `${name}: the upstream must not be spawned`);
    assert.ok(!r.stderr.includes(t.pin), `${name}: the PIN is never printed`);
  }
  // The same home and flags with the token, key and PIN in place do start.
  const ok = start(t, home, [], pin);
  assert.equal(ok.status, 0, ok.stderr);
  assert.equal(ok.spawned, true);
});

test('http-proxy, ledger anchor and ledger checkpoint: the token unavailable at start is exit 2, named', hsmSkip, () => {
  const t = freshToken();
  const home = tokenHome(t);
  const f = writeFiles({ 'm.yaml': MANIFEST, 'p.cedar': PERMIT_ALL });
  const env = { ...process.env, ...t.env, CLOAKPIPE_PKCS11_PIN: 'wrong-pin' };
  const loose = join(tempDir(), 'pin');
  writeFileSync(loose, t.pin + '\n', { mode: 0o644 });
  const runs: [string, string[], RegExp][] = [
    ['http-proxy', ['http-proxy', '--home', home, '--manifest', f['m.yaml'], '--policy', f['p.cedar'], '--listen', '127.0.0.1:0', '--', 'sh', '-c', 'cat'], /refused the PIN \(CKR_PIN_INCORRECT\)/],
    ['ledger anchor', ['ledger', 'anchor', '--home', home], /refused the PIN \(CKR_PIN_INCORRECT\)/],
    ['ledger checkpoint', ['ledger', 'checkpoint', '--home', home], /refused the PIN \(CKR_PIN_INCORRECT\)/],
    ['a PIN file others can read', ['ledger', 'anchor', '--home', home, '--pin-file', loose], /PIN file .* is readable by others/],
    ['--key on a file-key home', ['ledger', 'anchor', '--home', join(tempDir(), 'h'), '--key', t.uri()], /no gate home|not a key in a token|gate.key/],
  ];
  for (const [name, args, message] of runs) {
    const r = cloakpipe(args, { env, timeout: 60_000 });
    assert.equal(r.status, 2, `${name}: ${r.stdout}${r.stderr}`);
    assert.match(r.stderr, message, name);
    assert.ok(!r.stderr.includes(t.pin), `${name}: the PIN is never printed`);
  }
});

test('a key generated in another token under the same name is not this home\'s key: exit 2', hsmSkip, () => {
  const t = freshToken();
  const home = tokenHome(t);
  const impostor = freshToken(); // same label, same object name, another key
  const init = cloakpipe(['init', '--home', join(tempDir(), 'h2'), '--key', impostor.uri()], { env: { ...process.env, ...impostor.env, CLOAKPIPE_PKCS11_PIN: impostor.pin } });
  assert.equal(init.status, 0, init.stderr);
  const r = start(impostor, home, [], { CLOAKPIPE_PKCS11_PIN: impostor.pin });
  assert.equal(r.status, 2, r.stderr);
  // Its public key, readable without a login, is not gate.pub: refused before the PIN is sent.
  assert.match(r.stderr, /is not this home's gate key .*seen before any login: its PIN was not tried/);
  assert.equal(r.spawned, false);
});

// SoftHSM 2.6 signs pure Ed25519 whatever CK_EDDSA_PARAMS say, so a token key anchors epochs in
// Rekor as DSSE envelopes (docs/decisions/036); the log (here the in-repo Rekor-format logs,
// which verify submissions as Rekor does) records them, and `verify` and `anchor verify` accept
// them from the log key, the epoch root and the gate's public key alone.
for (const api of ['v1', 'v2'] as const) {
  test(`a token key anchors epochs in Rekor ${api} as DSSE; verify and anchor verify accept them`, hsmSkip, async () => {
    const t = freshToken();
    const home = tokenHome(t);
    const rekor = await startFakeRekor({ api });
    const dir = tempDir();
    const rekorKey = join(dir, 'rekor.pem');
    writeFileSync(rekorKey, rekor.publicKeyPem);
    try {
      const g = await gate(t, home, ['--rekor', rekor.url, '--rekor-key', rekorKey]);
      try {
        assert.ok(!(await g.client.callTool({ name: 'create_entities', arguments: entity('Anchored') })).isError);
      } finally {
        await g.close();
      }
      // ledger anchor through the token (--key, --pin-file): seals what the session left, anchors it.
      const more = await gate(t, home);
      await more.client.callTool({ name: 'read_graph', arguments: {} });
      await more.close();
      const la = await run(['ledger', 'anchor', '--home', home, '--key', t.uri(), '--pin-file', t.pinFile, '--rekor', rekor.url, '--rekor-key', rekorKey], t.env);
      assert.equal(la.status, 0, la.stdout + la.stderr);
      assert.match(la.stdout, /rekor +anchored/);
      const v = await run(['verify', '--home', home, '--rekor-key', rekorKey, '--require-anchors']);
      assert.equal(v.status, 0, v.stdout + v.stderr);
      assert.match(v.stdout, /rekor 2 verified/);
      // One anchor on its own, with the log key, the epoch root and the gate's public key.
      const db = new Database(join(home, 'ledger.db'), { readonly: true });
      const row = db.prepare("SELECT epoch_seq AS seq, data FROM anchors WHERE kind = 'rekor' ORDER BY epoch_seq LIMIT 1").get() as { seq: number; data: string };
      const epoch = JSON.parse((db.prepare('SELECT body FROM entries WHERE seq = ?').get(row.seq) as { body: string }).body);
      db.close();
      const stored = JSON.parse(row.data);
      const entry = stored.entry ?? stored;
      assert.equal(JSON.parse(Buffer.from(entry.canonicalizedBody, 'base64').toString('utf8')).kind, 'dsse');
      const file = join(dir, 'entry.json');
      writeFileSync(file, JSON.stringify(entry));
      const check = (digest: string, pub: string) => run(['anchor', 'verify', '--rekor-entry', file, '--rekor-key', rekorKey, '--digest', digest, '--public-key', pub]);
      const ok = await check(epoch.root, join(home, 'gate.pub'));
      assert.equal(ok.status, 0, ok.stdout + ok.stderr);
      assert.match(ok.stdout, /dsse 0\.0\.[12]/);
      const otherRoot = await check('sha256:' + 'ab'.repeat(32), join(home, 'gate.pub'));
      assert.equal(otherRoot.status, 1, otherRoot.stdout);
      const stranger = join(dir, 'stranger.pub');
      writeFileSync(stranger, generateKeyPairSync('ed25519').publicKey.export({ type: 'spki', format: 'pem' }));
      const otherKey = await check(epoch.root, stranger);
      assert.equal(otherKey.status, 1, otherKey.stdout);
    } finally {
      await rekor.close();
    }
  });
}

// The logs run in this process: commands that reach them must not block it.
async function run(args: string[], env: Record<string, string> = {}): Promise<{ status: number; stdout: string; stderr: string }> {
  try {
    const r = await promisify(execFile)(process.execPath, [CLI, ...args], { timeout: 120_000, env: { ...process.env, ...env } });
    return { status: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (e) {
    const x = e as { code?: number; stdout?: string; stderr?: string };
    return { status: typeof x.code === 'number' ? x.code : -1, stdout: x.stdout ?? '', stderr: x.stderr ?? '' };
  }
}

test('a fleet gate on PostgreSQL with its key in a token: registered with the public key from the token, signs through it', { ...hsmSkip, ...pgSkip }, async () => {
  const t = freshToken();
  const schema = freshSchema();
  const store = `${PG_URL}${PG_URL.includes('?') ? '&' : '?'}schema=${schema}`;
  try {
    const home = join(tempDir(), 'home');
    const init = cloakpipe(['init', '--home', home, '--store', store, '--gate-id', 'hsm-1', '--key', t.uri(), '--pin-file', t.pinFile], { env: { ...process.env, ...t.env } });
    assert.equal(init.status, 0, init.stderr);
    assert.ok(!existsSync(join(home, 'gate.key')));
    const g = await gate(t, home, ['--store', store]);
    try {
      assert.ok(!(await g.client.callTool({ name: 'create_entities', arguments: entity('Fleet') })).isError);
    } finally {
      await g.close();
    }
    // Another token's key under the same name is not the key the store registered: exit 2.
    const impostor = freshToken();
    const made = cloakpipe(['keygen', '--key', impostor.uri(), '--out', join(tempDir(), 'impostor')], { env: { ...process.env, ...impostor.env, CLOAKPIPE_PKCS11_PIN: impostor.pin } });
    assert.equal(made.status, 0, made.stderr);
    const r = start(impostor, home, ['--store', store, '--key', impostor.uri()], { CLOAKPIPE_PKCS11_PIN: impostor.pin });
    assert.equal(r.status, 2, r.stderr);
    assert.match(r.stderr, /not this home's gate key|registered in the store with another key/);
  } finally {
    await dropSchema(schema);
  }
});
