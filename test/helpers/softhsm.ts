// A fresh SoftHSM2 token per test: its own softhsm2.conf and token directory under a temp dir
// (SOFTHSM2_CONF), initialised with softhsm2-util. SoftHSM is Debian's `softhsm2` (scripts/test.sh
// and .ci/run install it). In CI (CI=true) a missing SoftHSM fails the suite; elsewhere the
// token tests skip, loudly.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import type { KeyObject } from 'node:crypto';
import type * as Pkcs11 from 'pkcs11js';
import { tempDir } from './cli.js';

const MODULES = ['/usr/lib/softhsm/libsofthsm2.so', '/usr/lib/x86_64-linux-gnu/softhsm/libsofthsm2.so', '/usr/lib/aarch64-linux-gnu/softhsm/libsofthsm2.so'];
export const SOFTHSM_MODULE = MODULES.find((m) => existsSync(m)) ?? '';
const UTIL = spawnSync('softhsm2-util', ['--version'], { encoding: 'utf8' }).status === 0;

if (!SOFTHSM_MODULE || !UTIL) {
  if (process.env.CI === 'true') throw new Error('SoftHSM2 is not installed: in CI the token suites must run (apt-get install softhsm2)');
  process.stderr.write('\n#### WARNING: SoftHSM2 is not installed: PKCS#11 token tests SKIP (apt-get install softhsm2) ####\n\n');
}

/** `{ skip }` for node:test when SoftHSM is not installed (never in CI). */
export const hsmSkip = SOFTHSM_MODULE && UTIL ? {} : { skip: 'no SoftHSM2 (apt-get install softhsm2)' };

export interface Token {
  /** SOFTHSM2_CONF for every process that opens the token. */
  env: Record<string, string>;
  pin: string;
  /** A 0600 file holding the PIN. */
  pinFile: string;
  label: string;
  /** The SoftHSM token directory (shared by tokens made `beside` one another). */
  tokensDir: string;
  /** The pkcs11: URI of the key `object` in this token. */
  uri(object?: string): string;
  /** Takes the token away (its directory moved aside) and puts it back. */
  remove(): void;
  restore(): void;
}

/**
 * `beside`: a second token in the same SoftHSM (one SOFTHSM2_CONF, one module, two slots), with
 * its own PIN (`pinGiven`, else a new one); remove() and restore() then take both away and back.
 */
export function freshToken(label = 'cloakpipe', beside?: Token, pinGiven?: string): Token {
  const dir = tempDir('cloakpipe-softhsm-');
  const tokens = beside ? beside.tokensDir : join(dir, 'tokens');
  const conf = beside ? beside.env.SOFTHSM2_CONF : join(dir, 'softhsm2.conf');
  if (!beside) {
    mkdirSync(tokens);
    writeFileSync(conf, `directories.tokendir = ${tokens}\nobjectstore.backend = file\nlog.level = ERROR\nslots.removable = false\n`);
  }
  const env = { SOFTHSM2_CONF: conf };
  const pin = pinGiven ?? '4711-' + Math.random().toString(36).slice(2, 8);
  const r = spawnSync('softhsm2-util', ['--init-token', '--free', '--label', label, '--pin', pin, '--so-pin', 'so-' + pin], {
    encoding: 'utf8',
    env: { ...process.env, ...env },
  });
  if (r.status !== 0) throw new Error(`softhsm2-util --init-token failed: ${r.stderr}`);
  const pinFile = join(dir, 'pin');
  writeFileSync(pinFile, pin + '\n', { mode: 0o600 });
  return {
    env,
    pin,
    pinFile,
    label,
    tokensDir: tokens,
    uri: (object = 'gate') => `pkcs11:token=${label};object=${object}?module-path=${SOFTHSM_MODULE}`,
    remove: () => renameSync(tokens, `${tokens}.away`),
    restore: () => renameSync(`${tokens}.away`, tokens),
  };
}

export const pkcs = createRequire(import.meta.url)('pkcs11js') as typeof Pkcs11;

/**
 * `use` with a read-write session of the token straight through SoftHSM (not cloakpipe's code),
 * logged in as the user with `pin` (null: not logged in): what an operator's tool would do to the token.
 */
export function straightToToken<T>(t: Token, pin: string | null, use: (p: Pkcs11.PKCS11, session: Buffer) => T): T {
  process.env.SOFTHSM2_CONF = t.env.SOFTHSM2_CONF;
  const p = new pkcs.PKCS11();
  p.load(SOFTHSM_MODULE);
  p.C_Initialize();
  try {
    const slot = p.C_GetSlotList(true).find((s) => p.C_GetTokenInfo(s).label.trim() === t.label)!;
    const session = p.C_OpenSession(slot, pkcs.CKF_SERIAL_SESSION | pkcs.CKF_RW_SESSION);
    if (pin !== null) p.C_Login(session, pkcs.CKU_USER, pin);
    return use(p, session);
  } finally {
    p.C_Finalize();
  }
}

/**
 * An EdDSA pair under the label `gate` made straight through SoftHSM, as another tool would make
 * it: no CKA_ID; `curve` Ed25519 unless told; a private key that needs a login unless `loginFree`;
 * `verify` sets CKA_VERIFY on the public key; `alwaysAuthenticate` asks the PIN at each signature
 * (CKA_ALWAYS_AUTHENTICATE); `sign: false` makes a private key that may not sign.
 */
export function pairMadeElsewhere(t: Token, o: { curve?: 'ed25519' | 'ed448'; loginFree?: boolean; verify?: boolean; alwaysAuthenticate?: boolean; sign?: boolean } = {}): void {
  const oid = Buffer.from(o.curve === 'ed448' ? '06032b6571' : '06032b6570', 'hex');
  straightToToken(t, t.pin, (p, session) => {
    const label = { type: pkcs.CKA_LABEL, value: 'gate' };
    p.C_GenerateKeyPair(
      session,
      { mechanism: 0x1055 }, // CKM_EC_EDWARDS_KEY_PAIR_GEN
      [{ type: pkcs.CKA_TOKEN, value: true }, label, ...(o.verify ? [{ type: pkcs.CKA_VERIFY, value: true }] : []), { type: pkcs.CKA_EC_PARAMS, value: oid }],
      [{ type: pkcs.CKA_TOKEN, value: true }, label, { type: pkcs.CKA_PRIVATE, value: !o.loginFree }, { type: pkcs.CKA_SIGN, value: o.sign ?? true }, { type: pkcs.CKA_SENSITIVE, value: true }, { type: pkcs.CKA_EXTRACTABLE, value: false },
       ...(o.alwaysAuthenticate ? [{ type: pkcs.CKA_ALWAYS_AUTHENTICATE, value: true }] : [])],
    );
  });
}

/**
 * An Ed25519 key made outside the token (a PEM file) imported into it under `label`, as an
 * operator's tool would (C_CreateObject straight through SoftHSM): its public half, its private
 * half (sensitive, not extractable), or both.
 */
export function importEd25519(t: Token, key: KeyObject, label: string, halves: { public?: boolean; private?: boolean }): void {
  const jwk = key.export({ format: 'jwk' });
  const common = [
    { type: pkcs.CKA_TOKEN, value: true },
    { type: pkcs.CKA_LABEL, value: label },
    { type: pkcs.CKA_KEY_TYPE, value: 0x40 }, // CKK_EC_EDWARDS
    { type: pkcs.CKA_EC_PARAMS, value: Buffer.from('06032b6570', 'hex') },
  ];
  straightToToken(t, t.pin, (p, session) => {
    if (halves.public) {
      const point = Buffer.concat([Buffer.from([0x04, 0x20]), Buffer.from(jwk.x!, 'base64url')]);
      p.C_CreateObject(session, [{ type: pkcs.CKA_CLASS, value: pkcs.CKO_PUBLIC_KEY }, ...common, { type: pkcs.CKA_VERIFY, value: true }, { type: pkcs.CKA_EC_POINT, value: point }]);
    }
    if (halves.private)
      p.C_CreateObject(session, [
        { type: pkcs.CKA_CLASS, value: pkcs.CKO_PRIVATE_KEY },
        ...common,
        { type: pkcs.CKA_PRIVATE, value: true },
        { type: pkcs.CKA_SIGN, value: true },
        { type: pkcs.CKA_SENSITIVE, value: true },
        { type: pkcs.CKA_EXTRACTABLE, value: false },
        { type: pkcs.CKA_VALUE, value: Buffer.from(jwk.d!, 'base64url') },
      ]);
  });
}
