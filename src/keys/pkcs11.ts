// A key inside a PKCS#11 token (an HSM, a cloud KMS behind a PKCS#11 module, SoftHSM in tests):
// the gate signs with CKM_EDDSA and never sees the private key. Guards against a host compromise
// carrying the key away: the object must be sensitive and not extractable, or it is refused.
// Start-up problems (module, token, PIN, key) throw TokenError, named; a token that goes away
// while running makes sign() throw SignerUnavailable (the gate refuses the call fail_closed) and
// every later sign() tries to reconnect, so signing resumes when the token returns, with the same
// key only (its public key must be the one opened first). Several signers may share a module in
// one process (the inbox holds an approver key and the gate key, ADR 061): its initialisation and
// the handles it hands out are the process's, so no signer finalises it under another.
import { createHash, createPublicKey, timingSafeEqual, verify, type KeyObject } from 'node:crypto';
import { createRequire } from 'node:module';
import { realpathSync } from 'node:fs';
import type * as Pkcs11 from 'pkcs11js';
import { BoundedModule, tokenCallHeld, TokenLate } from './bounded-module.js';
import { moduleFileRefusal } from './module-file.js';
import { ed25519ph } from '@noble/curves/ed25519.js';
import { keyIdOf, SignerUnavailable, type Signer, type ThreadKey } from '../core/signer.js';
import type { Pkcs11Uri } from './uri.js';
import { ThreadHeld } from '../ledger/seal.js';

export class TokenError extends Error {}

/** The token shows another public key under the name than the one expected, before any login. */
export class OtherKeyError extends TokenError {}

// PKCS#11 3.0 values pkcs11js does not name.
const CKK_EC_EDWARDS = 0x40;
const CKM_EC_EDWARDS_KEY_PAIR_GEN = 0x1055;
export const CKM_EDDSA = 0x1057;
/** DER of OID 1.3.101.112 (id-Ed25519): CKA_EC_PARAMS of an Ed25519 key. */
const ED25519_OID = Buffer.from('06032b6570', 'hex');
const SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');
/** CKA_EC_PARAMS naming Ed25519 by its curve name (PKCS#11 3.0 allows it beside the OID). */
const ED25519_NAME = Buffer.concat([Buffer.from([0x13, 12]), Buffer.from('edwards25519', 'latin1')]);

/** CK_EDDSA_PARAMS {phFlag = TRUE, ulContextDataLen = 0, pContextData = NULL}: Ed25519ph. */
function ed25519phParams(): Buffer {
  const p = Buffer.alloc(24); // CK_BBOOL, padding, CK_ULONG, pointer (LP64)
  p[0] = 1;
  return p;
}

/** Key types a token may hold under the gate key's name, as the refusal names them. */
const KEY_TYPES: Record<number, string> = {
  0x0: 'an RSA key (CKK_RSA)',
  0x1: 'a DSA key (CKK_DSA)',
  0x3: 'an EC (ECDSA) key (CKK_EC)',
  0x41: 'a Montgomery-curve (X25519/X448) key (CKK_EC_MONTGOMERY)',
};

const PROBE = Buffer.from('cloakpipe: does this token sign with this key?');

/** What a token answers for a key that does not make an Ed25519 signature with the login alone. */
const DECLINES = new Set([
  'CKR_USER_NOT_LOGGED_IN', // CKA_ALWAYS_AUTHENTICATE: the PIN again at each signature
  'CKR_KEY_FUNCTION_NOT_PERMITTED', // CKA_SIGN false
  'CKR_KEY_TYPE_INCONSISTENT',
  'CKR_MECHANISM_INVALID',
  'CKR_BUFFER_TOO_SMALL', // a signature longer than Ed25519's (Ed448)
]);

/**
 * What a token answered instead of a signature of its key (a fault, a failover to another key):
 * the code the signing thread reports it by (thread-sign.ts).
 */
export const WRONG_SIGNATURE = 'WrongSignature';

/** The CKR_ name of a binding error, or the error's class: never anything the caller passed in. */
function ckr(e: unknown): string {
  if (e instanceof TokenLate) return e.message;
  const text = String((e as Error)?.message ?? '');
  if (text.includes(WRONG_SIGNATURE)) return 'its signature does not verify with the gate key';
  const m = /CKR_[A-Z0-9_]+/.exec(text);
  return m ? m[0] : ((e as Error)?.name ?? 'error');
}

let binding: typeof Pkcs11 | undefined;
function loadBinding(): typeof Pkcs11 {
  if (binding) return binding;
  try {
    binding = createRequire(import.meta.url)('pkcs11js') as typeof Pkcs11;
  } catch {
    throw new TokenError('the PKCS#11 binding (pkcs11js) is not installed: npm install');
  }
  return binding;
}

/** A CK_ULONG attribute or handle (native byte order, little-endian here). */
function ulong(b: Buffer): number {
  return Number(b.length === 8 ? b.readBigUInt64LE() : b.readUInt32LE());
}

/** The raw 32-byte public key from CKA_EC_POINT (a DER OCTET STRING, or raw, as tokens differ). */
function rawPoint(point: Buffer): Buffer {
  if (point.length === 34 && point[0] === 0x04 && point[1] === 0x20) return point.subarray(2);
  if (point.length === 32) return point;
  throw new TokenError('the token returned an Ed25519 public key of an unexpected form');
}

export interface TokenOpenOptions {
  uri: Pkcs11Uri;
  pin: string;
  /** The PIN as it is now (its file read again): a reconnect logs in with a rotated PIN. */
  rereadPin?: () => string;
  /** Generate the key pair inside the token when it holds none (cloakpipe init). */
  create?: boolean;
  /** Told when the token goes away and when signing resumes (once per change). */
  log?: (line: string) => void;
  /** What the key is, for those lines (default "the gate key"). */
  role?: string;
  /** The command that makes the key, for the error when it is missing (default init's). */
  maker?: string;
  /** The public key the key must have (the home's gate.pub): a token showing another is refused before its PIN is tried. */
  expect?: KeyObject;
}

/**
 * A module as this process loaded it, shared by every signer on it. PKCS#11 makes C_Initialize,
 * C_Finalize and every session and object handle the process's: a signer that finalised on its
 * own would kill the others' sessions, and the numbers of their dead handles come back naming
 * new sessions and keys (a gate key signing with an approver's key). So the module counts its
 * finalisations (`epoch`): a handle from an earlier epoch is never used, nor closed. `lent`:
 * sessions a signing thread holds now; nothing finalises under a running C_Sign. `logins`: the
 * PIN (its digest) each token was logged in with in this epoch, by slot: a login is the process's
 * too, so a second key's C_Login answers "already logged in" whatever its PIN.
 */
interface Module {
  p: Pkcs11.PKCS11;
  thread: BoundedModule;
  path: string;
  users: number;
  epoch: number;
  lent: number;
  logins: Map<number, { epoch: number; pin: Buffer }>;
}

const pinDigest = (pin: string) => createHash('sha256').update(pin, 'utf8').digest();

const modules = new Map<string, Module>();

/** Token keys open in this process, by key id: an approver key is checked against the gate key's token. */
const openSigners = new Map<string, Pkcs11Signer>();

/** The token key with this key id that this process has open, if any. */
export function openTokenKey(keyId: string): Pkcs11Signer | undefined {
  return openSigners.get(keyId);
}

/** At most this many objects of a class are looked at in a token: more is not a gate's token. */
const MAX_OBJECTS = 4096;

function release(m: Module): void {
  if (--m.users > 0) return;
  try {
    if (m.lent === 0) m.p.C_Finalize(); // never under a signing thread's C_Sign, even one held
  } catch {
    /* not initialised */
  }
  if (modules.get(m.path) === m) modules.delete(m.path);
  m.thread.end();
}

interface Live {
  session: Buffer;
  key: Buffer;
  /** A second session, lent to the signing thread: its operation state is its own. */
  lendable: Buffer;
  /** The module's epoch the handles belong to. */
  epoch: number;
}

export class Pkcs11Signer implements Signer {
  readonly publicKey: KeyObject;
  /** The public key's 32 bytes (Ed25519ph signatures are checked with them). */
  private readonly rawPublic: Buffer;
  readonly keyId: string;
  readonly where: string;
  /** Whether the token made a verifying Ed25519ph signature when opened. */
  readonly prehash: boolean;
  /** Whether this open generated the key pair. */
  readonly created: boolean;
  /** The token, as messages name it. */
  readonly token: string;
  log?: (line: string) => void;
  private live: Live | null;
  private closed = false;
  private loans: Promise<unknown> = Promise.resolve();
  /** The second session is lent to a signing thread right now. */
  private lent = false;
  /** Sessions of a dropped connection, closed once the signing thread has it no more. */
  private closing: { session: Buffer; epoch: number }[] = [];
  /** The module's epoch in which this signer's connection broke (its own failure, or another's finalising). */
  private brokeAt = -1;
  /** A PIN the token refused: never tried again (a real HSM locks its user PIN after a few). */
  private refusedPin: string | null = null;
  /** The digest of the PIN this key logged in with (sharesPin()). */
  private pinSeen: Buffer | null = null;
  /** The pair this open generated, until discarded or closed (init's, whose home may not be made). */
  private made: Pkcs11.KeyPair | null = null;
  /** The probe signed by each private Ed25519 key this key's login reaches in its token (reaches()). */
  private probes: Buffer[] | null = null;

  private get p(): Pkcs11.PKCS11 {
    return this.m.p;
  }

  private constructor(
    private readonly m: Module,
    private readonly pkcs: typeof Pkcs11,
    private readonly opts: TokenOpenOptions,
  ) {
    this.where = opts.uri.text;
    this.token = this.tokenName();
    this.log = opts.log;
    const { live, raw, created, made } = this.connect(true);
    this.live = live;
    this.created = created;
    this.made = made;
    this.rawPublic = raw;
    this.publicKey = createPublicKey({ key: Buffer.concat([SPKI_PREFIX, raw]), format: 'der', type: 'spki' });
    this.keyId = keyIdOf(this.publicKey);
    try {
      // The pair must sign and verify; and a token that ignores the prehash flag (SoftHSM 2.6 signs
      // pure Ed25519 whatever the parameters say) must not be taken for one that honours it.
      if (!verify(null, PROBE, this.publicKey, this.rawSign(PROBE, null))) throw new TokenError(`the key ${this.where} does not sign for its own public key`);
      let ph: Buffer | null = null;
      try {
        ph = this.rawSign(PROBE, ed25519phParams());
      } catch {
        ph = null;
      }
      this.prehash = ph !== null && ed25519ph.verify(ph, PROBE, raw, { zip215: false });
    } catch (e) {
      this.closeSessions(live); // the module may stay loaded for another signer
      throw e;
    }
    openSigners.set(this.keyId, this);
  }

  static open(opts: TokenOpenOptions): Pkcs11Signer {
    const pkcs = loadBinding();
    const path = opts.uri.modulePath;
    // By the file itself: a module named through a symlink is still the one library loaded.
    let real = path;
    try {
      real = realpathSync(path);
    } catch {
      /* load() names the failure */
    }
    let m = modules.get(real);
    if (!m) {
      const refusal = moduleFileRefusal(path);
      if (refusal) throw new TokenError(refusal);
      // Every call of the main thread's goes through the module's token thread, with a deadline.
      const thread = new BoundedModule(path);
      const p = thread.asBinding();
      try {
        p.load(path);
      } catch (e) {
        thread.end();
        throw new TokenError(e instanceof TokenLate ? ckr(e) : `the PKCS#11 module ${path} cannot be loaded`);
      }
      m = { p, thread, path: real, users: 0, epoch: 0, lent: 0, logins: new Map() };
      modules.set(real, m);
    }
    m.users++;
    try {
      return new Pkcs11Signer(m, pkcs, opts);
    } catch (e) {
      release(m);
      if (e instanceof TokenError) throw e;
      throw new TokenError(`the PKCS#11 module ${path} failed (${ckr(e)})`);
    }
  }

  private closeSessions(live: Live): void {
    if (live.epoch !== this.m.epoch) return; // dead with the module's last finalising; the numbers may be another's now
    for (const s of [live.session, live.lendable]) {
      try {
        this.p.C_CloseSession(s);
      } catch {
        /* gone with the token */
      }
    }
  }

  /** The connection, unless another signer finalised the module since it was made. */
  private current(): Live | null {
    if (this.live && this.live.epoch !== this.m.epoch) {
      this.brokeAt = this.live.epoch;
      this.live = null;
    }
    return this.live;
  }

  // Initialise, find the token, log in, find (or create) the key. Throws TokenError, named.
  private connect(first: boolean): { live: Live; raw: Buffer; created: boolean; made: Pkcs11.KeyPair | null } {
    const { p, pkcs, opts } = this;
    const { uri } = opts;
    try {
      // The signing thread calls the module too (lendToThread): it must lock for itself.
      p.C_Initialize({ flags: pkcs.CKF_OS_LOCKING_OK });
    } catch (e) {
      if (ckr(e) !== 'CKR_CRYPTOKI_ALREADY_INITIALIZED') throw new TokenError(`the PKCS#11 module ${uri.modulePath} does not initialise (${ckr(e)})`);
    }
    const slot = this.findSlot();
    let session: Buffer;
    try {
      session = p.C_OpenSession(slot, pkcs.CKF_SERIAL_SESSION | (opts.create && first ? pkcs.CKF_RW_SESSION : 0));
    } catch (e) {
      throw new TokenError(`cannot open a session with token ${this.tokenName()} (${ckr(e)})`);
    }
    try {
      this.refuseOtherKey(session, first ? opts.expect : this.publicKey);
      const pin = first ? opts.pin : this.pinAgain();
      this.logIn(slot, session, pin);
      // Private keys of any type: one of another type under the name is named, never taken for none
      // (init would generate a second key under its label).
      let keys = this.find(session, pkcs.CKO_PRIVATE_KEY, false);
      let created = false;
      if (keys.length === 0 && opts.create && first) {
        // A pair made beside a lone public key would look like a racing init's, at every run. (A
        // racing init's pair half made is one too: run again then.)
        if (this.find(session, pkcs.CKO_PUBLIC_KEY, false).length > 0)
          throw new TokenError(
            `token ${this.tokenName()} holds a public key ${this.keyName()} without its private key: remove it, or name another object= (if another init is making the pair right now, run the command again)`,
          );
        const made = this.generate(session);
        keys = this.find(session, pkcs.CKO_PRIVATE_KEY, false);
        created = true;
        // Another process made a pair under the same name between the search and this one (two
        // inits at once): this pair is removed again, so the token keeps one key under the name,
        // whichever search then finds (the other's, or none if it gave up too).
        if (keys.length !== 1 || this.find(session, pkcs.CKO_PUBLIC_KEY).length !== 1) {
          for (const h of [made.privateKey, made.publicKey]) {
            try {
              p.C_DestroyObject(session, h);
            } catch {
              /* gone with the token: nothing of it is used */
            }
          }
          throw new TokenError(`another key pair was created as ${this.keyName()} in token ${this.tokenName()} at the same time: this one was removed again; run the command again to use the key the token keeps`);
        }
      }
      if (keys.length === 0) throw new TokenError(`token ${this.tokenName()} holds no Ed25519 private key ${this.keyName()} (${opts.maker ?? 'cloakpipe init --key …'} creates one)`);
      if (keys.length > 1) throw new TokenError(`token ${this.tokenName()} holds ${keys.length} private keys matching ${this.keyName()}: name one by id=`);
      const key = keys[0];
      const [type, sensitive, extractable, loginOnly] = p
        .C_GetAttributeValue(session, key, [{ type: pkcs.CKA_KEY_TYPE }, { type: pkcs.CKA_SENSITIVE }, { type: pkcs.CKA_EXTRACTABLE }, { type: pkcs.CKA_PRIVATE }])
        .map((a) => a.value as Buffer);
      if (ulong(type) !== CKK_EC_EDWARDS)
        throw new TokenError(`the key ${this.keyName()} in token ${this.tokenName()} is ${KEY_TYPES[ulong(type)] ?? `a key of type 0x${ulong(type).toString(16)}`}, not Ed25519: the gate signs Ed25519 only`);
      if (sensitive[0] !== 1 || extractable[0] !== 0)
        throw new TokenError(`the key ${this.keyName()} in token ${this.tokenName()} can leave the token (CKA_SENSITIVE false or CKA_EXTRACTABLE true): refused`);
      // A private key that is not CKA_PRIVATE signs in any session, logged in or not: whoever
      // reaches the token signs as the gate without its PIN.
      if (loginOnly[0] !== 1)
        throw new TokenError(`the key ${this.keyName()} in token ${this.tokenName()} can be used without logging in (CKA_PRIVATE false): refused`);
      this.checkSigns(session, key);
      const pubs = this.find(session, pkcs.CKO_PUBLIC_KEY);
      if (pubs.length !== 1) throw new TokenError(`token ${this.tokenName()} holds ${pubs.length} public keys matching ${this.keyName()} (one is needed beside the private key)`);
      const [params, point] = p.C_GetAttributeValue(session, pubs[0], [{ type: pkcs.CKA_EC_PARAMS }, { type: pkcs.CKA_EC_POINT }]).map((a) => a.value as Buffer);
      // CKK_EC_EDWARDS is Ed448's type too: the curve is named by the parameters.
      if (!params.equals(ED25519_OID) && !params.equals(ED25519_NAME))
        throw new TokenError(`the key ${this.keyName()} in token ${this.tokenName()} is an Edwards-curve key of another curve than Ed25519 (Ed448?): the gate signs Ed25519 only`);
      let lendable: Buffer;
      try {
        lendable = p.C_OpenSession(slot, pkcs.CKF_SERIAL_SESSION);
      } catch (e) {
        throw new TokenError(`cannot open a second session with token ${this.tokenName()} (${ckr(e)})`);
      }
      return { live: { session, key, lendable, epoch: this.m.epoch }, raw: rawPoint(point), created, made: created ? { privateKey: key, publicKey: pubs[0] } : null };
    } catch (e) {
      try {
        p.C_CloseSession(session);
      } catch {
        /* already gone */
      }
      if (e instanceof TokenError) throw e;
      throw new TokenError(`token ${this.tokenName()} failed (${ckr(e)})`);
    }
  }

  // Before the PIN is sent: a token whose public key under the name (readable without a login) is
  // not the expected one is another token than the home's (a slot-id that now names another
  // token, a token put in its place). Its PIN is not this one, and each wrong PIN tried counts
  // towards locking that token's user PIN, at every start. A token whose public keys need a
  // login shows none: the key is compared after the login, as always.
  private refuseOtherKey(session: Buffer, expect: KeyObject | undefined): void {
    if (!expect) return;
    const seen = this.find(session, this.pkcs.CKO_PUBLIC_KEY);
    if (seen.length === 0 || this.showsKey(session, seen, expect)) return;
    throw new OtherKeyError(
      `token ${this.tokenName()} shows a public key ${this.keyName()} that is not the one expected (seen before any login: its PIN was not tried; a slot renumbered? name the token by token= and serial=)`,
    );
  }

  // Logs in with `pin`; when another key of this process has logged in to the token already, the
  // token does not look at the PIN, so it must be the one the token took then (two keys in one
  // token, each with its own PIN file: a wrong one would sign unchecked).
  private logIn(slot: Buffer, session: Buffer, pin: string): void {
    const { p, pkcs } = this;
    const logins = this.m.logins;
    const at = ulong(slot);
    try {
      p.C_Login(session, pkcs.CKU_USER, pin);
    } catch (e) {
      const code = ckr(e);
      if (code !== 'CKR_USER_ALREADY_LOGGED_IN') {
        const refused = code === 'CKR_PIN_INCORRECT' || code === 'CKR_PIN_LEN_RANGE' || code === 'CKR_PIN_INVALID' || code === 'CKR_PIN_LOCKED';
        if (refused) this.refusedPin = pin;
        throw new TokenError(refused ? `token ${this.tokenName()} refused the PIN (${code})` : `cannot log in to token ${this.tokenName()} (${code})`);
      }
      const took = logins.get(at);
      if (took === undefined || took.epoch !== this.m.epoch || !timingSafeEqual(took.pin, pinDigest(pin)))
        throw new TokenError(`token ${this.tokenName()} is logged in already (another key in it) and this key's PIN is not the PIN it took: refused`);
      this.pinSeen = took.pin;
      return;
    }
    this.pinSeen = pinDigest(pin);
    logins.set(at, { epoch: this.m.epoch, pin: this.pinSeen });
  }

  // What would make every signature fail, named by the attribute to change (else the probe's
  // CKR_KEY_FUNCTION_NOT_PERMITTED or CKR_USER_NOT_LOGGED_IN names nothing the user can act on).
  private checkSigns(session: Buffer, key: Buffer): void {
    const { p, pkcs } = this;
    const [sign] = p.C_GetAttributeValue(session, key, [{ type: pkcs.CKA_SIGN }]).map((a) => a.value as Buffer);
    if (sign[0] !== 1) throw new TokenError(`the key ${this.keyName()} in token ${this.tokenName()} may not sign (CKA_SIGN false): the gate key must be a signing key`);
    let always: Buffer | undefined;
    try {
      [always] = p.C_GetAttributeValue(session, key, [{ type: pkcs.CKA_ALWAYS_AUTHENTICATE }]).map((a) => a.value as Buffer);
    } catch {
      always = undefined; // a token without the attribute: no login is asked per signature
    }
    if (always?.[0] === 1)
      throw new TokenError(
        `the key ${this.keyName()} in token ${this.tokenName()} asks the PIN at each signature (CKA_ALWAYS_AUTHENTICATE true): the gate signs every entry; make the key without it`,
      );
  }

  // The PIN for logging in again: read anew (it may have been rotated since start), and never
  // one the token already refused, which would count towards locking the user PIN.
  private pinAgain(): string {
    const pin = this.opts.rereadPin ? this.opts.rereadPin() : this.opts.pin;
    if (pin === this.refusedPin) throw new TokenError(`token ${this.tokenName()} refused this PIN before: not trying it again (put the right PIN in its file)`);
    return pin;
  }

  private tokenName(): string {
    const u = this.opts.uri;
    return u.token !== undefined ? JSON.stringify(u.token) : u.serial !== undefined ? `serial ${u.serial}` : `in slot ${u.slotId}`;
  }

  private keyName(): string {
    const u = this.opts.uri;
    return [u.object !== undefined ? `object=${JSON.stringify(u.object)}` : '', u.id ? `id=${u.id.toString('hex')}` : ''].filter(Boolean).join(' ');
  }

  private findSlot(): Buffer {
    const { p, opts } = this;
    const u = opts.uri;
    let slots: Buffer[];
    try {
      slots = p.C_GetSlotList(true);
    } catch (e) {
      throw new TokenError(`the PKCS#11 module ${u.modulePath} lists no slots (${ckr(e)})`);
    }
    const hits = slots.filter((s) => {
      if (u.slotId !== undefined && ulong(s) !== u.slotId) return false;
      const t = p.C_GetTokenInfo(s);
      const eq = (want: string | undefined, got: string) => want === undefined || want === got.replace(/[ \0]+$/, '');
      return eq(u.token, t.label) && eq(u.serial, t.serialNumber) && eq(u.manufacturer, t.manufacturerID) && eq(u.model, t.model);
    });
    if (hits.length === 0) throw new TokenError(`no token ${this.tokenName()} in PKCS#11 module ${u.modulePath}`);
    if (hits.length > 1) throw new TokenError(`${hits.length} tokens match ${this.tokenName()} in ${u.modulePath}: add serial=`);
    return hits[0];
  }

  private template(cls: number, edwards: boolean): Pkcs11.Template {
    const { pkcs, opts } = this;
    const t: Pkcs11.Template = [{ type: pkcs.CKA_CLASS, value: cls }, ...(edwards ? [{ type: pkcs.CKA_KEY_TYPE, value: CKK_EC_EDWARDS }] : [])];
    if (opts.uri.object !== undefined) t.push({ type: pkcs.CKA_LABEL, value: opts.uri.object });
    if (opts.uri.id) t.push({ type: pkcs.CKA_ID, value: opts.uri.id });
    return t;
  }

  /** Objects of class `cls` under the URI's name; Edwards-curve keys only unless `edwards` is false. */
  private find(session: Buffer, cls: number, edwards = true): Buffer[] {
    const { p } = this;
    p.C_FindObjectsInit(session, this.template(cls, edwards));
    try {
      return p.C_FindObjects(session, 16);
    } finally {
      p.C_FindObjectsFinal(session);
    }
  }

  // The pair is generated inside the token: sensitive, never extractable, a token object.
  private generate(session: Buffer): Pkcs11.KeyPair {
    const { p, pkcs, opts } = this;
    const named = (t: Pkcs11.Template) => [
      ...t,
      ...(opts.uri.object !== undefined ? [{ type: pkcs.CKA_LABEL, value: opts.uri.object }] : []),
      ...(opts.uri.id ? [{ type: pkcs.CKA_ID, value: opts.uri.id }] : []),
    ];
    let made: Pkcs11.KeyPair;
    try {
      made = p.C_GenerateKeyPair(
        session,
        { mechanism: CKM_EC_EDWARDS_KEY_PAIR_GEN },
        named([
          { type: pkcs.CKA_TOKEN, value: true },
          { type: pkcs.CKA_PRIVATE, value: false },
          { type: pkcs.CKA_VERIFY, value: true },
          { type: pkcs.CKA_EC_PARAMS, value: ED25519_OID },
        ]),
        named([
          { type: pkcs.CKA_TOKEN, value: true },
          { type: pkcs.CKA_PRIVATE, value: true },
          { type: pkcs.CKA_SIGN, value: true },
          { type: pkcs.CKA_SENSITIVE, value: true },
          { type: pkcs.CKA_EXTRACTABLE, value: false },
        ]),
      );
    } catch (e) {
      throw new TokenError(`token ${this.tokenName()} cannot generate an Ed25519 key pair (${ckr(e)})`);
    }
    if (!opts.uri.id) this.identify(session, made);
    return made;
  }

  // Both halves get one CKA_ID, the public key's identifier (SHA-1 of the key, RFC 5280
  // 4.2.1.2's method 1), which is how other PKCS#11 tools pair a private key with its public
  // key. A token that will not set it keeps the pair without one: a key without CKA_ID (made
  // before, or by another tool) is found by its label all the same.
  private identify(session: Buffer, made: Pkcs11.KeyPair): void {
    const { p, pkcs } = this;
    try {
      const [point] = p.C_GetAttributeValue(session, made.publicKey, [{ type: pkcs.CKA_EC_POINT }]).map((a) => a.value as Buffer);
      const id = createHash('sha1').update(rawPoint(point)).digest();
      for (const h of [made.publicKey, made.privateKey]) p.C_SetAttributeValue(session, h, [{ type: pkcs.CKA_ID, value: id }]);
    } catch {
      /* left without an id */
    }
  }

  private rawSign(message: Uint8Array, params: Buffer | null, live = this.live): Buffer {
    const { p } = this;
    if (!live) throw new SignerUnavailable(`the key ${this.where} is not connected`);
    p.C_SignInit(live.session, params ? { mechanism: CKM_EDDSA, parameter: params } : { mechanism: CKM_EDDSA }, live.key);
    return p.C_Sign(live.session, Buffer.from(message), Buffer.alloc(64));
  }

  // One signature, checked with the public key (a token may answer with something else); on
  // failure the session is dropped and the next call reconnects.
  private signWith(message: Uint8Array, params: Buffer | null): Buffer {
    if (this.closed) throw new SignerUnavailable(`the key ${this.where} is closed`);
    if (!this.current()) this.reconnect();
    try {
      const sig = this.rawSign(message, params);
      const good = params ? ed25519ph.verify(sig, message, this.rawPublic, { zip215: false }) : verify(null, message, this.publicKey, sig);
      if (!good) throw new Error(WRONG_SIGNATURE);
      return sig;
    } catch (e) {
      this.drop(`token signing failed (${ckr(e)})`);
      throw new SignerUnavailable(`the key ${this.where} cannot sign (${ckr(e)})`);
    }
  }

  private drop(why: string): void {
    const live = this.current();
    if (!live) return;
    for (const session of [live.session, live.lendable]) this.closing.push({ session, epoch: live.epoch });
    this.brokeAt = live.epoch;
    this.live = null;
    this.closeDropped();
    this.log?.(`${why}: ${this.opts.role ?? 'the gate key'} cannot sign until the token is back`);
  }

  // Sessions are closed only when not lent (never under a running C_Sign), and only while their
  // handles are still theirs (the module not finalised since).
  private closeDropped(): void {
    if (this.lent) return;
    for (const { session, epoch } of this.closing.splice(0)) {
      if (epoch !== this.m.epoch) continue;
      try {
        this.p.C_CloseSession(session);
      } catch {
        /* gone with the token */
      }
    }
  }

  // The same token and the same key, or nothing: a different key would fork the ledger's signer.
  // When another signer has re-initialised the module since this one's connection broke, it
  // connects in that; else it finalises and initialises the module anew (what brings a token
  // back), which every other signer on it then notices by the epoch.
  private reconnect(): void {
    const fresh = this.brokeAt < this.m.epoch;
    if (!fresh) {
      // Never C_Finalize under a running C_Sign, this signer's or another's.
      if (this.m.lent > 0) throw new SignerUnavailable(`the key ${this.where} cannot sign: a signature the token began has not returned yet`);
      try {
        this.p.C_Finalize();
      } catch {
        /* not initialised */
      }
      this.m.epoch++;
    }
    let got: { live: Live; raw: Buffer };
    try {
      got = this.connect(false);
    } catch (e) {
      this.brokeAt = this.m.epoch; // the next try finalises
      throw new SignerUnavailable(`the key ${this.where} is unavailable: ${(e as Error).message}`);
    }
    const refuse = (why: string): never => {
      this.closeSessions(got.live);
      this.brokeAt = this.m.epoch;
      throw new SignerUnavailable(why);
    };
    const same = keyIdOf(createPublicKey({ key: Buffer.concat([SPKI_PREFIX, got.raw]), format: 'der', type: 'spki' })) === this.keyId;
    if (!same) refuse(`the token at ${this.where} now holds another key than the one opened`);
    // The private key under the name must be the opened public key's pair too, as at start: one
    // put there by another tool beside the old public key would sign entries verify refuses.
    let probe: Buffer;
    try {
      probe = this.rawSign(PROBE, null, got.live);
    } catch (e) {
      return refuse(`the key ${this.where} cannot sign (${ckr(e)})`);
    }
    if (!verify(null, PROBE, this.publicKey, probe)) refuse(`the token at ${this.where} now holds another private key than the one opened: it does not sign for the opened public key`);
    this.live = got.live;
    this.log?.('the token is back: signing resumed');
  }

  /**
   * Whether this key's login also reaches the Ed25519 key `publicKey` in its token: a private key
   * there signs for it, or its public half is kept there (a pair made in the token, even one that
   * asks the PIN again at each signature: the login holds that PIN). A token has one user PIN, so
   * an approver key this reaches is one the gate's host can approve the gate's own calls with.
   */
  reaches(publicKey: KeyObject): boolean {
    const live = this.current();
    if (!live) throw new SignerUnavailable(`the key ${this.where} is not connected`);
    const { pkcs } = this;
    try {
      if (this.showsKey(live.session, this.findAll(live.session, pkcs.CKO_PUBLIC_KEY), publicKey)) return true;
      this.probes ??= this.findAll(live.session, pkcs.CKO_PRIVATE_KEY).flatMap((key) => {
        try {
          return [this.rawSign(PROBE, null, { ...live, key })];
        } catch (e) {
          // A key that will not sign without more: its public half is looked for above. Any other
          // failure (no answer, the token gone) leaves the question open: the caller refuses.
          if (DECLINES.has(ckr(e))) return [];
          throw e;
        }
      });
    } catch (e) {
      throw new SignerUnavailable(`token ${this.token} gave no answer (${ckr(e)})`);
    }
    return this.probes.some((sig) => sig.length === 64 && verify(null, PROBE, publicKey, sig));
  }

  /** Whether `other` logged in with this key's PIN: whoever holds one PIN opens both keys' tokens. */
  sharesPin(other: Pkcs11Signer): boolean {
    return this.pinSeen !== null && other.pinSeen !== null && timingSafeEqual(this.pinSeen, other.pinSeen);
  }

  /** Whether one of the public key objects `handles` is `publicKey` (a point of another form or curve is not). */
  private showsKey(session: Buffer, handles: Buffer[], publicKey: KeyObject): boolean {
    const { p, pkcs } = this;
    const want = publicKey.export({ type: 'spki', format: 'der' }).subarray(SPKI_PREFIX.length);
    return handles.some((h) => {
      const [point] = p.C_GetAttributeValue(session, h, [{ type: pkcs.CKA_EC_POINT }]).map((a) => a.value as Buffer);
      try {
        return rawPoint(point).equals(want);
      } catch {
        return false; // another curve's point, or another form
      }
    });
  }

  /** Every Edwards-curve key object of class `cls` in the token, whatever its name. */
  private findAll(session: Buffer, cls: number): Buffer[] {
    const { p, pkcs } = this;
    p.C_FindObjectsInit(session, [{ type: pkcs.CKA_CLASS, value: cls }, { type: pkcs.CKA_KEY_TYPE, value: CKK_EC_EDWARDS }]);
    try {
      const all: Buffer[] = [];
      for (let got = p.C_FindObjects(session, 256); got.length > 0 && all.length < MAX_OBJECTS; got = p.C_FindObjects(session, 256)) all.push(...got);
      return all;
    } finally {
      p.C_FindObjectsFinal(session);
    }
  }

  sign(message: Uint8Array): Buffer {
    return this.signWith(message, null);
  }

  readonly slowInline = true;

  /**
   * Lends the second session and the key to a signing thread for one run (ADR 042); one run at a
   * time (a session holds one operation). A run that fails drops the connection: the next one
   * reconnects, and nothing closes or finalises the module under a running C_Sign.
   */
  lendToThread<T>(use: (key: ThreadKey) => Promise<T>): Promise<T> {
    const next = this.loans.then(() => this.lend(use));
    this.loans = next.catch(() => undefined);
    return next;
  }

  private async lend<T>(use: (key: ThreadKey) => Promise<T>): Promise<T> {
    if (this.closed) throw new SignerUnavailable(`the key ${this.where} is closed`);
    if (!this.current()) this.reconnect();
    const live = this.live!;
    let failed = false;
    let held: Promise<void> | null = null;
    this.lent = true;
    this.m.lent++;
    try {
      return await use({ kind: 'token', modulePath: this.opts.uri.modulePath, session: live.lendable, handle: live.key, publicKey: this.publicKey });
    } catch (e) {
      failed = true;
      if (e instanceof ThreadHeld) held = e.returned;
      throw new SignerUnavailable(`the key ${this.where} cannot sign (${e instanceof ThreadHeld ? e.message : ckr(e)})`);
    } finally {
      if (failed && this.live === live) this.drop('token signing failed in the signing thread');
      // A thread held inside C_Sign keeps the loan: nothing closes its session or finalises the
      // module under it (so nothing signs until it answers), and the process may not wait for it.
      const giveBack = () => {
        this.m.lent--;
        this.lent = false;
        this.closeDropped();
      };
      if (held) {
        tokenCallHeld(1);
        void held.then(() => {
          tokenCallHeld(-1);
          giveBack();
        });
      } else giveBack();
    }
  }

  signPrehashed(artifact: Uint8Array): Buffer | null {
    return this.prehash ? this.signWith(artifact, ed25519phParams()) : null;
  }

  /**
   * Removes from the token the pair this open generated (an init that could not make its home):
   * left there, it would be taken at the next init for a key some other home had made. Throws
   * TokenError, named, when the token does not remove it.
   */
  discardCreated(): void {
    const live = this.current();
    if (this.made === null) return;
    if (live === null) throw new TokenError(`the key pair made in token ${this.token} is left there: the token went away`);
    try {
      for (const h of [this.made.privateKey, this.made.publicKey]) this.p.C_DestroyObject(live.session, h);
    } catch (e) {
      throw new TokenError(`the key pair made in token ${this.token} is left there (${ckr(e)})`);
    }
    this.made = null;
    this.close();
  }

  /** Closes this signer's sessions; the module is finalised with the last signer on it. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    if (openSigners.get(this.keyId) === this) openSigners.delete(this.keyId);
    const live = this.current();
    if (live) this.closeSessions(live);
    this.live = null;
    this.closeDropped();
    release(this.m);
  }
}
