// The in-repo log in Rekor v2 (rekor-tiles) form, on 127.0.0.1: a real Ed25519 log key (as the
// public shards use), a tree kept as C2SP tlog-tiles (tlog-tiles.ts) and a real C2SP signed note
// as checkpoint (key name = origin, key ID = SHA-256(origin || 0x0A || 0x01 || key)). It speaks the
// v2 write API, `POST /api/v2/log/entries` with a hashedRekordRequestV002, verifies the
// Ed25519ph signature as Rekor does, integrates the entry, and answers a protojson
// TransparencyLogEntry with the inclusion proof; it serves the read API of tlog-tiles
// (`/checkpoint`, `/tile/<L>/<N>[.p/<W>]`, `/tile/entries/<N>[.p/<W>]`). No v1 API: a client
// must not fall back to a signed entry timestamp that does not exist.
import { createHash, createPublicKey, generateKeyPairSync, randomBytes, sign, verify, type KeyObject } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { canonicalize } from '../../src/core/canonical.js';
import { formatCheckpoint } from '../../src/ledger/anchors/rekor/checkpoint.js';
import { ed25519PublicRaw, verifyEd25519phDigest } from '../../src/ledger/anchors/rekor/ed25519ph.js';
import { noteKeyId } from '../../src/ledger/anchors/rekor/log-key.js';
import { pae } from '../../src/ledger/anchors/rekor/dsse.js';
import { TiledTree, parseTileIndexPath } from './tlog-tiles.js';
import type { FakeRekor, RekorMisbehaviour } from './fake-rekor.js';
import { listenLocal } from './local-http.js';

export type FakeRekorV2 = FakeRekor & { origin: string; tree: TiledTree };

export async function startFakeRekorV2(opts: { origin?: string; prefill?: number } = {}): Promise<FakeRekorV2> {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const other = generateKeyPairSync('ed25519');
  const origin = opts.origin ?? 'log2026-1.rekor.cloakpipe.test';
  const keyId = noteKeyId(origin, publicKey)!;
  const tree = new TiledTree();
  // Unrelated leaves first, so proofs cross tiles and levels.
  for (let i = 0; i < (opts.prefill ?? 0); i++) tree.append(randomBytes(48));
  const seen = new Set<string>();

  const signedNote = (size: number, key: KeyObject, pub: KeyObject): string => {
    const note = formatCheckpoint(origin, size, tree.root(size));
    const sig = Buffer.concat([noteKeyId(origin, pub)!.subarray(0, 4), sign(null, Buffer.from(note), key)]);
    return `${note}\n\u2014 ${origin} ${sig.toString('base64')}\n`;
  };

  const b64 = (b: Buffer) => b.toString('base64');
  const transparencyLogEntry = (index: number) => {
    const size = tree.size;
    let hashes = tree.inclusionProof(index, size);
    if (fake.misbehave === 'truncated-proof') hashes = hashes.slice(0, -1);
    const checkpoint = fake.misbehave === 'wrong-checkpoint-key' ? signedNote(size, other.privateKey, other.publicKey) : signedNote(size, privateKey, publicKey);
    return {
      logIndex: String(index),
      logId: { keyId: b64(keyId) },
      kindVersion: { kind: JSON.parse(tree.entries[index].toString('utf8')).kind, version: '0.0.2' },
      integratedTime: '0',
      inclusionProof: { logIndex: String(index), rootHash: b64(tree.root(size)), treeSize: String(size), hashes: hashes.map(b64), checkpoint: { envelope: checkpoint } },
      canonicalizedBody: b64(tree.entries[index]),
    };
  };

  // rekor-tiles' hashedrekord 0.0.2 validation (Ed25519 keys only here: PKIX_ED25519_PH).
  const validate = (req: any): Buffer | string => {
    if (req?.dsseRequestV002) return validateDsse(req.dsseRequestV002);
    const r = req?.hashedRekordRequestV002 ?? req?.hashedRekordRequestV0_0_2;
    if (!r) return 'only hashedrekord 0.0.2 requests';
    const digest = typeof r.digest === 'string' ? Buffer.from(r.digest, 'base64') : null;
    const sig = typeof r.signature?.content === 'string' ? Buffer.from(r.signature.content, 'base64') : null;
    const v = r.signature?.verifier;
    if (!digest || !sig || typeof v?.publicKey?.rawBytes !== 'string') return 'missing fields';
    if (v.keyDetails !== 'PKIX_ED25519_PH') return 'this test log accepts PKIX_ED25519_PH keys only';
    let key: KeyObject;
    try {
      key = createPublicKey({ key: Buffer.from(v.publicKey.rawBytes, 'base64'), format: 'der', type: 'spki' });
    } catch {
      return 'invalid public key';
    }
    if (key.asymmetricKeyType !== 'ed25519' || digest.length !== 64) return 'Ed25519ph requires a SHA2_512 digest';
    if (!verifyEd25519phDigest(sig, digest, ed25519PublicRaw(key))) return 'verifying signature: invalid';
    return Buffer.from(
      canonicalize({
        apiVersion: '0.0.2',
        kind: 'hashedrekord',
        spec: {
          hashedRekordV002: {
            data: { algorithm: 'SHA2_512', digest: r.digest },
            signature: { content: r.signature.content, verifier: { keyDetails: v.keyDetails, publicKey: { rawBytes: v.publicKey.rawBytes } } },
          },
        },
      }),
    );
  };

  // rekor-tiles' dsse 0.0.2: each envelope signature verifies (PKIX_ED25519: pure Ed25519) over
  // the PAE by one of the verifiers; the entry records SHA2_256 of the payload and the signatures.
  const validateDsse = (r: any): Buffer | string => {
    const env = r?.envelope;
    if (typeof env?.payload !== 'string' || typeof env?.payloadType !== 'string' || !Array.isArray(env?.signatures) || !Array.isArray(r?.verifiers)) return 'missing fields';
    const verifiers: { key: KeyObject; v: any }[] = [];
    for (const v of r.verifiers) {
      if (v?.keyDetails !== 'PKIX_ED25519' || typeof v?.publicKey?.rawBytes !== 'string') return 'this test log accepts PKIX_ED25519 verifiers only';
      try {
        verifiers.push({ key: createPublicKey({ key: Buffer.from(v.publicKey.rawBytes, 'base64'), format: 'der', type: 'spki' }), v });
      } catch {
        return 'invalid public key';
      }
    }
    const payload = Buffer.from(env.payload, 'base64');
    const signatures = [];
    for (const s of env.signatures) {
      const sig = Buffer.from(String(s?.sig), 'base64');
      const hit = verifiers.find(({ key }) => verify(null, pae(env.payloadType, payload), key, sig));
      if (!hit) return 'could not verify envelope signature';
      signatures.push({ content: sig.toString('base64'), verifier: { keyDetails: 'PKIX_ED25519', publicKey: { rawBytes: hit.v.publicKey.rawBytes } } });
    }
    if (signatures.length === 0) return 'no signatures';
    return Buffer.from(
      canonicalize({
        apiVersion: '0.0.2',
        kind: 'dsse',
        spec: { dsseV002: { payloadHash: { algorithm: 'SHA2_256', digest: createHash('sha256').update(payload).digest('base64') }, signatures } },
      }),
    );
  };

  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      // No keep-alive: a client idle longer than the server's keep-alive timeout would otherwise
      // reuse a socket the server has closed.
      const json = (status: number, v: unknown) => res.writeHead(status, { 'content-type': 'application/json', connection: 'close' }).end(JSON.stringify(v));
      const bytes = (b: Buffer | string | null, type = 'application/octet-stream') =>
        b === null ? res.writeHead(404, { connection: 'close' }).end() : res.writeHead(200, { 'content-type': type, connection: 'close' }).end(b);
      if (fake.misbehave === 'http-500') return json(500, { code: 13, message: 'boom' });
      const path = (req.url ?? '').split('?')[0];
      if (req.method === 'GET' && path === '/checkpoint') return bytes(signedNote(tree.size, privateKey, publicKey), 'text/plain; charset=utf-8');
      const t = /^\/tile\/(entries|\d+)\/((?:x\d{3}\/)*\d{3})(?:\.p\/(\d+))?$/.exec(path);
      if (req.method === 'GET' && t) {
        const n = parseTileIndexPath(t[2]);
        const w = t[3] === undefined ? undefined : Number(t[3]);
        if (n === null || (w !== undefined && (w < 1 || w > 255))) return bytes(null);
        return bytes(t[1] === 'entries' ? tree.entryBundle(n, w) : tree.tile(Number(t[1]), n, w));
      }
      if (req.method === 'POST' && path === '/api/v2/log/entries') {
        let body: unknown;
        try {
          body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        } catch {
          return json(400, { code: 3, message: 'invalid JSON' });
        }
        const entry = validate(body);
        if (typeof entry === 'string') return json(400, { code: 3, message: entry });
        const k = entry.toString('base64');
        if (seen.has(k)) return json(409, { code: 6, message: 'an equivalent entry already exists in the transparency log' });
        seen.add(k);
        return json(201, transparencyLogEntry(tree.append(entry)));
      }
      json(404, { code: 5, message: 'Not Found' });
    });
  });
  const { url, close } = await listenLocal(server);
  const fake: FakeRekorV2 = {
    url,
    publicKeyPem: publicKey.export({ type: 'spki', format: 'pem' }) as string,
    logID: keyId.toString('hex'),
    misbehave: 'none' as RekorMisbehaviour,
    origin,
    tree,
    get size() {
      return tree.size;
    },
    close,
  };
  return fake;
}
