// Epoch anchors by a key that cannot sign Ed25519ph (a token's CKM_EDDSA without the prehash
// variant) go to Rekor as DSSE envelopes over the epoch root (ADR 036). Here a file key stands in
// for such a token (prehash off), against the in-repo v1 and v2 logs, which verify submissions as
// Rekor does; the checks then hold the entry to exactly that root, that key and that payload type.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { submitToRekor, dsseRequestFor, toEntryFile, toEntryFileV2 } from '../../src/ledger/anchors/rekor/client.js';
import { verifyRekorEntry } from '../../src/ledger/anchors/rekor/verify.js';
import { pae } from '../../src/ledger/anchors/rekor/dsse.js';
import { FileSigner } from '../../src/keys/file.js';
import type { Signer } from '../../src/core/signer.js';
import { startFakeRekor, fakeRoot, type FakeRekor } from '../helpers/fake-rekor.js';
import { anchorCode } from '../helpers/anchor-code.js';

/** A key that signs pure Ed25519 only, as SoftHSM 2.6 does. */
function pureOnly(): Signer {
  const f = new FileSigner(generateKeyPairSync('ed25519').privateKey);
  return { publicKey: f.publicKey, keyId: f.keyId, where: 'test token', prehash: false, sign: (m) => f.sign(m), signPrehashed: () => null, close: () => f.close() };
}

const logs: Record<'v1' | 'v2', FakeRekor> = {} as never;
before(async () => {
  logs.v1 = await startFakeRekor();
  logs.v2 = await startFakeRekor({ api: 'v2' });
});
after(() => Promise.all([logs.v1.close(), logs.v2.close()]));

for (const api of ['v1', 'v2'] as const) {
  test(`Rekor ${api}: a pure-Ed25519 key's epoch anchor is a dsse entry bound to the root and the key`, async () => {
    const log = logs[api];
    const gate = pureOnly();
    const root = fakeRoot(`dsse-${api}`);
    const r = await submitToRekor(log.url, root, gate, { rekorKey: log.publicKeyPem, api });
    assert.equal(r.summary!.kind, 'dsse');
    assert.equal(r.summary!.bodySignature, 'verified');
    assert.equal(r.summary!.digestMatched, 'artifact');
    const digest = { algorithm: 'sha256' as const, value: root };
    assert.equal(await anchorCode(Promise.resolve().then(() => verifyRekorEntry(r.entry, log.publicKeyPem, { signer: gate.publicKey, digest }))), 'valid');
    // Another root, another key, or no root to check the envelope against: refused.
    const other = { algorithm: 'sha256' as const, value: fakeRoot('another epoch') };
    assert.equal(await anchorCode(Promise.resolve().then(() => verifyRekorEntry(r.entry, log.publicKeyPem, { signer: gate.publicKey, digest: other }))), 'body_mismatch');
    assert.equal(await anchorCode(Promise.resolve().then(() => verifyRekorEntry(r.entry, log.publicKeyPem, { signer: pureOnly().publicKey, digest }))), 'body_signature_invalid');
    assert.equal(await anchorCode(Promise.resolve().then(() => verifyRekorEntry(r.entry, log.publicKeyPem, { signer: gate.publicKey }))), 'body_signature_invalid');
  });

  test(`Rekor ${api}: the gate key's DSSE signature over another payload type is no epoch anchor`, async () => {
    const log = logs[api];
    const gate = pureOnly();
    const root = fakeRoot(`dsse-type-${api}`);
    // A genuine envelope by the gate key with the root as payload, but typed as something else:
    // the log accepts it; as evidence for the epoch it must not count.
    const req = dsseRequestFor(root, gate, api) as any;
    const env = api === 'v2' ? req.dsseRequestV002.envelope : JSON.parse(req.spec.proposedContent.envelope);
    env.payloadType = 'application/vnd.in-toto+json';
    env.signatures[0].sig = gate.sign(pae(env.payloadType, root)).toString('base64');
    if (api === 'v1') req.spec.proposedContent.envelope = JSON.stringify(env);
    const res = await fetch(`${log.url}/api/${api}/log/entries`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(req) });
    assert.equal(res.status, 201);
    const answer: any = await res.json();
    const entry = api === 'v2' ? toEntryFileV2(answer) : toEntryFile(answer).entry!;
    const digest = { algorithm: 'sha256' as const, value: root };
    assert.equal(await anchorCode(Promise.resolve().then(() => verifyRekorEntry(entry, log.publicKeyPem, { signer: gate.publicKey, digest }))), 'body_signature_invalid');
  });
}
