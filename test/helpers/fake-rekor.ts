// An in-repo Rekor-compatible log on 127.0.0.1: a real ECDSA P-256 log key, a real RFC 6962 tree
// that grows with every entry, real signed entry timestamps and real signed checkpoints (signed
// note, key hint = first 4 bytes of the logID). It accepts hashedrekord v0.0.1 proposals and, like
// Rekor, verifies their signature before integrating them (Ed25519 keys: Ed25519ph over the
// SHA-512 digest the entry records; other key types are refused here). Its answers verify with the
// same code as the public fixtures. `misbehave` corrupts answers for negative tests.
import { createHash, createPublicKey, generateKeyPairSync, sign, verify, type KeyObject } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { canonicalize } from '../../src/core/canonical.js';
import { MerkleTreeBuilder, inclusionProof, leafHash } from '../../src/ledger/merkle.js';
import { formatCheckpoint } from '../../src/ledger/anchors/rekor/checkpoint.js';
import { ed25519PublicRaw, verifyEd25519phDigest } from '../../src/ledger/anchors/rekor/ed25519ph.js';
import { logIdOf } from '../../src/ledger/anchors/rekor/log-key.js';
import { pae } from '../../src/ledger/anchors/rekor/dsse.js';
import { startFakeRekorV2 } from './fake-rekor-v2.js';
import { listenLocal } from './local-http.js';

// omit-proof: the POST answer lacks the inclusion proof (the client must fetch the entry).
export type RekorMisbehaviour = 'none' | 'bad-set' | 'truncated-proof' | 'wrong-checkpoint-key' | 'omit-proof' | 'http-500';

export type FakeRekor = {
  url: string;
  publicKeyPem: string;
  logID: string;
  misbehave: RekorMisbehaviour;
  readonly size: number;
  close(): Promise<void>;
};

type Stored = { body: Buffer; integratedTime: number; logIndex: number; index: number };

/**
 * The v1 log (default), or with `api: 'v2'` the Rekor v2 (tlog-tiles) log of fake-rekor-v2.ts
 * (`prefill` unrelated leaves first so proofs cross tiles).
 */
export async function startFakeRekor(
  opts: { api?: 'v1' | 'v2'; hostname?: string; treeId?: bigint; indexOffset?: number; prefill?: number } = {},
): Promise<FakeRekor> {
  if (opts.api === 'v2') return startFakeRekorV2({ origin: opts.hostname, prefill: opts.prefill });
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const other = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const hostname = opts.hostname ?? 'rekor.cloakpipe.test';
  const treeId = opts.treeId ?? 1234567890123456789n;
  const origin = `${hostname} - ${treeId}`;
  const offset = opts.indexOffset ?? 1000;
  const logID = logIdOf(publicKey);
  const leaves: Buffer[] = [];
  const tree = new MerkleTreeBuilder();
  const byUuid = new Map<string, Stored>();

  const ecdsa = (key: KeyObject, data: Buffer) => sign('sha256', data, { key, dsaEncoding: 'der' });

  const checkpoint = (size: number, root: Buffer, key: KeyObject, keyPub: KeyObject): string => {
    const note = formatCheckpoint(origin, size, root, [`Timestamp: ${BigInt(Date.now()) * 1_000_000n}`]);
    const sig = Buffer.concat([logIdOf(keyPub).subarray(0, 4), ecdsa(key, Buffer.from(note))]);
    return `${note}\n\u2014 ${hostname} ${sig.toString('base64')}\n`;
  };

  const answer = (uuid: string, s: Stored, fromPost = false) => {
    const bodyB64 = s.body.toString('base64');
    let set = ecdsa(privateKey, Buffer.from(canonicalize({ body: bodyB64, integratedTime: s.integratedTime, logID: logID.toString('hex'), logIndex: s.logIndex })));
    const size = leaves.length;
    const root = tree.root();
    let hashes = inclusionProof(leaves, s.index).map((h) => h.toString('hex'));
    let cp = checkpoint(size, root, privateKey, publicKey);
    if (fake.misbehave === 'bad-set') {
      set = Buffer.from(set);
      set[set.length - 3] ^= 0x01;
    }
    if (fake.misbehave === 'truncated-proof') hashes = hashes.slice(0, -1);
    if (fake.misbehave === 'wrong-checkpoint-key') cp = checkpoint(size, root, other.privateKey, other.publicKey);
    const verification =
      fake.misbehave === 'omit-proof' && fromPost
        ? undefined
        : {
            signedEntryTimestamp: set.toString('base64'),
            inclusionProof: { logIndex: s.index, treeSize: size, rootHash: root.toString('hex'), hashes, checkpoint: cp },
          };
    return { [uuid]: { body: bodyB64, integratedTime: s.integratedTime, logID: logID.toString('hex'), logIndex: s.logIndex, ...(verification ? { verification } : {}) } };
  };

  // Rekor's hashedrekord validation: parse, check key and digest, verify the signature.
  const validate = (proposal: any): Buffer | string => {
    if (proposal?.kind === 'dsse') return validateDsse(proposal);
    if (proposal?.kind !== 'hashedrekord' || proposal?.apiVersion !== '0.0.1') return 'unsupported kind or apiVersion';
    const hash = proposal.spec?.data?.hash;
    const sigB64 = proposal.spec?.signature?.content;
    const keyB64 = proposal.spec?.signature?.publicKey?.content;
    if (typeof hash?.algorithm !== 'string' || typeof hash?.value !== 'string' || typeof sigB64 !== 'string' || typeof keyB64 !== 'string') return 'missing fields';
    let key: KeyObject;
    try {
      key = createPublicKey(Buffer.from(keyB64, 'base64').toString('utf8'));
    } catch {
      return 'invalid public key';
    }
    if (key.asymmetricKeyType !== 'ed25519') return 'this test log accepts Ed25519 keys only';
    if (hash.algorithm !== 'sha512' || !/^[0-9a-f]{128}$/.test(hash.value)) return 'Ed25519ph requires a sha512 digest';
    if (!verifyEd25519phDigest(Buffer.from(sigB64, 'base64'), Buffer.from(hash.value, 'hex'), ed25519PublicRaw(key))) return 'verifying signature: invalid';
    return Buffer.from(
      canonicalize({ apiVersion: '0.0.1', kind: 'hashedrekord', spec: { data: { hash: { algorithm: hash.algorithm, value: hash.value } }, signature: { content: sigB64, publicKey: { content: keyB64 } } } }),
    );
  };

  // Rekor's dsse 0.0.1: every envelope signature must verify (pure Ed25519 here) over the PAE by
  // one of the verifiers; the log records the payload and envelope hashes and the signatures.
  const validateDsse = (proposal: any): Buffer | string => {
    if (proposal?.apiVersion !== '0.0.1') return 'unsupported apiVersion';
    const pc = proposal.spec?.proposedContent;
    if (typeof pc?.envelope !== 'string' || !Array.isArray(pc?.verifiers) || pc.verifiers.length === 0) return 'missing fields';
    let env: any;
    let keys: KeyObject[];
    try {
      env = JSON.parse(pc.envelope);
      keys = pc.verifiers.map((v: string) => createPublicKey(Buffer.from(v, 'base64').toString('utf8')));
    } catch {
      return 'invalid envelope or verifier';
    }
    if (typeof env?.payload !== 'string' || typeof env?.payloadType !== 'string' || !Array.isArray(env.signatures) || env.signatures.length === 0) return 'invalid envelope';
    const payload = Buffer.from(env.payload, 'base64');
    const signatures: { signature: string; verifier: string }[] = [];
    for (const s of env.signatures) {
      const sig = Buffer.from(String(s?.sig), 'base64');
      const i = keys.findIndex((k) => k.asymmetricKeyType === 'ed25519' && verify(null, pae(env.payloadType, payload), k, sig));
      if (i < 0) return 'could not verify envelope signature';
      signatures.push({ signature: sig.toString('base64'), verifier: pc.verifiers[i] });
    }
    const hex = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');
    return Buffer.from(
      canonicalize({
        apiVersion: '0.0.1',
        kind: 'dsse',
        spec: { envelopeHash: { algorithm: 'sha256', value: hex(pc.envelope) }, payloadHash: { algorithm: 'sha256', value: hex(payload) }, signatures },
      }),
    );
  };

  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const json = (status: number, v: unknown, headers: Record<string, string> = {}) =>
        res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(v));
      if (fake.misbehave === 'http-500') return json(500, { code: 500, message: 'boom' });
      const path = (req.url ?? '').split('?')[0];
      if (req.method === 'GET' && path === '/api/v1/log/publicKey') {
        return res.writeHead(200, { 'content-type': 'application/x-pem-file' }).end(fake.publicKeyPem);
      }
      if (req.method === 'GET' && path.startsWith('/api/v1/log/entries/')) {
        const uuid = path.slice('/api/v1/log/entries/'.length);
        const s = byUuid.get(uuid);
        return s ? json(200, answer(uuid, s)) : json(404, { code: 404, message: 'not found' });
      }
      if (req.method === 'POST' && path === '/api/v1/log/entries') {
        let proposal: unknown;
        try {
          proposal = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        } catch {
          return json(400, { code: 400, message: 'invalid JSON' });
        }
        const body = validate(proposal);
        if (typeof body === 'string') return json(400, { code: 400, message: body });
        const leaf = leafHash(body);
        const uuid = treeId.toString(16).padStart(16, '0') + leaf.toString('hex');
        if (byUuid.has(uuid)) return json(409, { code: 409, message: 'an equivalent entry already exists' }, { location: `/api/v1/log/entries/${uuid}` });
        const stored: Stored = { body, integratedTime: Math.floor(Date.now() / 1000), logIndex: offset + leaves.length, index: leaves.length };
        leaves.push(leaf);
        tree.addLeafHash(leaf);
        byUuid.set(uuid, stored);
        return json(201, answer(uuid, stored, true), { location: `/api/v1/log/entries/${uuid}` });
      }
      json(404, { code: 404, message: 'not found' });
    });
  });
  const { url, close } = await listenLocal(server);
  const fake: FakeRekor = {
    url,
    publicKeyPem: publicKey.export({ type: 'spki', format: 'pem' }) as string,
    logID: logID.toString('hex'),
    misbehave: 'none',
    get size() {
      return leaves.length;
    },
    close,
  };
  return fake;
}

/** SHA-256 helper for tests that need an epoch-root-like artifact. */
export const fakeRoot = (label: string): Buffer => createHash('sha256').update(label).digest();
