// JWT access tokens against a JWKS file, adversarially: every claim, every way a token can lie
// about its algorithm or key (alg none, HMAC keyed with the public key, another key under a
// known kid, a key of another type), kid rotation by rewriting the file, and the JWKS files
// that must not load at all.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import { createHmac } from 'node:crypto';
import { SignJWT, exportJWK, generateKeyPair, type CryptoKey, type JWK } from 'jose';
import { JwtVerifier, JwksError } from '../../src/doors/http-jwt.js';
import { tempDir } from '../helpers/cli.js';

const ISS = 'https://idp.example';
const AUD = 'https://gate.example/mcp';
const now = () => Math.floor(Date.now() / 1000);

async function keyPair(alg: string, kid: string): Promise<{ priv: CryptoKey; jwk: JWK }> {
  const { publicKey, privateKey } = await generateKeyPair(alg, { extractable: true });
  return { priv: privateKey, jwk: { ...(await exportJWK(publicKey)), kid, alg, use: 'sig' } };
}

function writeJwks(path: string, keys: JWK[]): void {
  // Replaced atomically, as a rotation job would.
  writeFileSync(path + '.tmp', JSON.stringify({ keys }));
  renameSync(path + '.tmp', path);
}

async function sign(k: { priv: CryptoKey; jwk: JWK }, claims: Record<string, unknown> = {}, header: Record<string, unknown> = {}): Promise<string> {
  const t = now();
  return new SignJWT({ sub: 'agent-7', client_id: 'client-7', ...claims })
    .setProtectedHeader({ alg: k.jwk.alg!, kid: k.jwk.kid, typ: 'at+jwt', ...header })
    .setIssuer((claims.iss as string) ?? ISS)
    .setAudience((claims.aud as string) ?? AUD)
    .setIssuedAt(t)
    .setExpirationTime((claims.exp as number) ?? t + 300)
    .sign(k.priv);
}

const b64 = (v: unknown) => Buffer.from(typeof v === 'string' ? v : JSON.stringify(v)).toString('base64url');
const bearer = (t: string) => `Bearer ${t}`;

async function setup() {
  const dir = tempDir();
  const jwks = join(dir, 'jwks.json');
  const es = await keyPair('ES256', 'k-es');
  const rs = await keyPair('RS256', 'k-rs');
  const ed = await keyPair('EdDSA', 'k-ed');
  writeJwks(jwks, [es.jwk, rs.jwk, ed.jwk]);
  return { dir, jwks, es, rs, ed, v: new JwtVerifier({ jwksPath: jwks, issuer: ISS, audience: AUD }) };
}

test('jwt: a token of each allowed algorithm verifies; the agent is sub, else client_id', async () => {
  const s = await setup();
  for (const k of [s.es, s.rs, s.ed]) assert.deepEqual(await s.v.check(bearer(await sign(k))), { agent: 'agent-7' });
  assert.deepEqual(await s.v.check(bearer(await sign(s.es, { sub: undefined }))), { agent: 'client-7' });
  assert.equal(await s.v.check(bearer(await sign(s.es, { sub: undefined, client_id: undefined }))), null);
  assert.equal(await s.v.check(bearer(await sign(s.es, { sub: 'bad agent\u0001' }))), null);
});

test('jwt: wrong iss, wrong aud, expired, not yet valid, no exp: each refused', async () => {
  const s = await setup();
  const t = now();
  assert.equal(await s.v.check(bearer(await sign(s.es, { iss: 'https://evil.example' }))), null);
  assert.equal(await s.v.check(bearer(await sign(s.es, { aud: 'https://other.example/mcp' }))), null);
  assert.equal(await s.v.check(bearer(await sign(s.es, { exp: t - 120 }))), null);
  assert.equal(await s.v.check(bearer(await sign(s.es, { nbf: t + 600 }))), null);
  // Within the leeway both ways: still valid.
  assert.ok(await s.v.check(bearer(await sign(s.es, { exp: t - 5 }))));
  const noExp = await new SignJWT({ sub: 'a' }).setProtectedHeader({ alg: 'ES256', kid: 'k-es' }).setIssuer(ISS).setAudience(AUD).sign(s.es.priv);
  assert.equal(await s.v.check(bearer(noExp)), null);
});

test('jwt: alg none, and HS256 keyed with the public key (key confusion), are refused', async () => {
  const s = await setup();
  const claims = { sub: 'mallory', iss: ISS, aud: AUD, exp: now() + 300 };
  for (const header of [{ alg: 'none' }, { alg: 'none', kid: 'k-es' }, { alg: 'None', kid: 'k-rs' }]) {
    assert.equal(await s.v.check(bearer(`${b64(header)}.${b64(claims)}.`)), null);
    assert.equal(await s.v.check(bearer(`${b64(header)}.${b64(claims)}.x`)), null);
  }
  // The attacker knows the public key: HMAC with every form of it a confused verifier might use.
  const pemLike = [JSON.stringify(s.rs.jwk), s.rs.jwk.n!, Buffer.from(s.rs.jwk.n!, 'base64url').toString('latin1'), JSON.stringify(s.es.jwk)];
  for (const alg of ['HS256', 'HS384', 'HS512']) {
    for (const kid of ['k-rs', 'k-es']) {
      for (const secret of pemLike) {
        const head = `${b64({ alg, kid, typ: 'at+jwt' })}.${b64(claims)}`;
        const mac = createHmac('sha' + alg.slice(2), secret).update(head).digest('base64url');
        assert.equal(await s.v.check(bearer(`${head}.${mac}`)), null);
      }
    }
  }
});

test('jwt: another key under a known kid, a kid not in the file, an algorithm that does not suit the key, a tampered payload: refused', async () => {
  const s = await setup();
  const rogue = await keyPair('ES256', 'k-es'); // same kid, not the published key
  assert.equal(await s.v.check(bearer(await sign(rogue))), null);
  const unknown = await keyPair('ES256', 'k-unknown');
  assert.equal(await s.v.check(bearer(await sign(unknown))), null);
  // An RS256 token whose header names the EC key's kid.
  assert.equal(await s.v.check(bearer(await sign({ priv: s.rs.priv, jwk: { ...s.rs.jwk, kid: 'k-es' } }))), null);
  const good = await sign(s.es);
  const [h, p, sig] = good.split('.');
  const body = JSON.parse(Buffer.from(p, 'base64url').toString());
  assert.equal(await s.v.check(bearer(`${h}.${b64({ ...body, sub: 'admin' })}.${sig}`)), null);
  assert.equal(await s.v.check(bearer(`${h}.${p}.${sig.slice(0, -2)}AA`)), null);
  for (const header of [undefined, '', 'Basic abc', `bearer  ${good}`, `Bearer ${good} x`, `Bearer ${good}.`, `Token ${good}`]) assert.equal(await s.v.check(header), null);
});

test('jwt: kid rotation — a new key added to the file verifies at once; a key removed stops verifying; a broken file refuses every token until mended', async () => {
  const s = await setup();
  const next = await keyPair('ES256', 'k-next');
  const old = await sign(s.es);
  assert.equal(await s.v.check(bearer(await sign(next))), null);
  writeJwks(s.jwks, [s.es.jwk, next.jwk]);
  assert.ok(await s.v.check(bearer(await sign(next))));
  assert.ok(await s.v.check(bearer(old)));
  writeJwks(s.jwks, [next.jwk]);
  assert.equal(await s.v.check(bearer(old)), null);
  writeFileSync(s.jwks, '{"keys": [ broken');
  assert.equal(await s.v.check(bearer(await sign(next))), null, 'a JWKS that does not load refuses (fail closed)');
  writeJwks(s.jwks, [next.jwk]);
  assert.ok(await s.v.check(bearer(await sign(next))));
});

test('jwt: a JWKS with a symmetric key, private key material, a non-signature key, a disallowed alg, duplicate kids or duplicate JSON keys does not load', async () => {
  const s = await setup();
  const bad: [string, string][] = [
    [JSON.stringify({ keys: [{ kty: 'oct', k: 'c2VjcmV0', kid: 'h' }] }), 'symmetric'],
    [JSON.stringify({ keys: [{ ...s.es.jwk, d: 'AAAA' }] }), 'private key'],
    [JSON.stringify({ keys: [{ ...s.es.jwk, use: 'enc' }] }), 'not a signature key'],
    [JSON.stringify({ keys: [{ ...s.rs.jwk, alg: 'HS256' }] }), 'not allowed'],
    [JSON.stringify({ keys: [s.es.jwk, { ...s.rs.jwk, kid: 'k-es' }] }), 'share a kid'],
    [`{"keys": [${JSON.stringify(s.es.jwk)}], "keys": []}`, 'strict JSON'],
    ['{"keys": []}', 'at least one key'],
  ];
  for (const [text, why] of bad) {
    const p = join(s.dir, 'bad.json');
    writeFileSync(p, text);
    assert.throws(() => new JwtVerifier({ jwksPath: p, issuer: ISS, audience: AUD }), (e: unknown) => e instanceof JwksError && e.message.includes(why), why);
  }
  assert.throws(() => new JwtVerifier({ jwksPath: join(s.dir, 'none.json'), issuer: ISS, audience: AUD }), JwksError);
});

test('jwt: only an access token (typ at+jwt, RFC 9068 section 4): an ID token or other JWT of the same issuer and audience is refused', async () => {
  const s = await setup();
  assert.deepEqual(await s.v.check(bearer(await sign(s.es, {}, { typ: 'application/at+jwt' }))), { agent: 'agent-7' });
  assert.deepEqual(await s.v.check(bearer(await sign(s.es, {}, { typ: 'AT+JWT' }))), { agent: 'agent-7' }, 'a media type is case-insensitive');
  // An OpenID Connect ID token says typ JWT, or nothing; a logout token logout+jwt.
  for (const typ of ['JWT', undefined, 'logout+jwt', 'secevent+jwt', 'at+jwt-not']) {
    assert.equal(await s.v.check(bearer(await sign(s.es, {}, { typ }))), null, `typ ${String(typ)}`);
  }
});
