// One call in flight (ADR 045): once the last call's reply is out and no other call came, the
// gate seals that call's result entry while it waits, so the next call's group signs only its
// own decision. With calls overlapping nothing is sealed ahead. Either way the home verifies.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { openGate } from '../../src/gate/open.js';
import { FileSigner } from '../../src/keys/file.js';
import { Ledger } from '../../src/ledger/ledger.js';
import type { UpstreamReply } from '../../src/core/outcome.js';
import { cloakpipe, makeHome, PERMIT_ALL, writeFiles } from '../helpers/cli.js';
import { ledgerOf } from '../helpers/support-desk.js';

const MANIFEST = `version: 1
release: seal-ahead@1
tools:
  lookup:
    effect: read
    arguments:
      key: { type: string, max_len: 64 }
`;

// The reply arrives from outside (as an upstream's line does), not in the turn that forwarded it.
const answered = () => new Promise<UpstreamReply>((r) => setTimeout(() => r({ result: { content: [{ type: 'text', text: 'found' }] } }), 0));
const idle = () => new Promise<void>((r) => setImmediate(() => setImmediate(r)));

/** Signatures the home's key file makes while `fn` runs (the real signer, counted). */
async function signatures<T>(fn: () => Promise<T>): Promise<{ value: T; signed: number }> {
  const sign = Object.getOwnPropertyDescriptor(FileSigner.prototype, 'sign')!.value as FileSigner['sign'];
  let signed = 0;
  FileSigner.prototype.sign = function (this: FileSigner, m: Uint8Array) {
    signed++;
    return sign.call(this, m);
  };
  try {
    return { value: await fn(), signed };
  } finally {
    FileSigner.prototype.sign = sign;
  }
}

test('calls one after another: each result entry is sealed while the gate waits, and the next group signs one entry', async () => {
  const home = makeHome();
  const f = writeFiles({ 'm.yaml': MANIFEST, 'p.cedar': PERMIT_ALL });
  const opened = await openGate({ home, manifestPath: f['m.yaml'], policyPath: f['p.cedar'], mode: 'enforce', approverKeys: [], callTimeoutMs: 5000 });
  const perCall: number[] = [];
  try {
    const { gate } = opened;
    for (let i = 0; i < 5; i++) {
      const { value, signed } = await signatures(async () => {
        const outcome = await gate.handleCall({ tool: 'lookup', arguments: { key: `k${i}` }, meta: {} }, answered);
        await idle(); // the gate waits for the host's next call: the result is sealed now
        return outcome;
      });
      assert.equal(value.kind, 'forwarded');
      perCall.push(signed);
    }
  } finally {
    await opened.close('test');
  }
  // Each call: its decision, signed in its group (with the previous result, sealed ahead), and
  // its own result, sealed ahead while the gate waited. Two signatures for two entries; a
  // sealing-ahead that missed would show three.
  assert.deepEqual(perCall.slice(1), [2, 2, 2, 2]);
  const entries = ledgerOf(home);
  const results = entries.filter((e) => e.kind === 'result');
  assert.equal(results.length, 5);
  for (const r of results) {
    const d = entries.find((e) => e.seq === r.decision)!;
    assert.ok(r.ts >= d.ts, 'a result is never dated before its decision');
  }
  const v = cloakpipe(['verify', '--home', home]);
  assert.equal(v.status, 0, v.stdout + v.stderr);
});

test('calls that overlap: no call is sealed ahead while another is in flight, at most the last one is, and the home verifies', async () => {
  const home = makeHome();
  const f = writeFiles({ 'm.yaml': MANIFEST, 'p.cedar': PERMIT_ALL });
  const opened = await openGate({ home, manifestPath: f['m.yaml'], policyPath: f['p.cedar'], mode: 'enforce', approverKeys: [], callTimeoutMs: 5000 });
  const preseal = Ledger.prototype.preseal;
  const sealedAhead: unknown[] = [];
  Ledger.prototype.preseal = function (this: Ledger, fields, ts) {
    sealedAhead.push((fields as { decision?: unknown }).decision);
    return preseal.call(this, fields, ts);
  };
  try {
    const { gate } = opened;
    // Eight calls in flight at once, answered in turn: only the last to finish is the last in flight.
    const releases: (() => void)[] = [];
    const calls = Array.from({ length: 8 }, (_, i) => {
      const held = new Promise<void>((r) => releases.push(r));
      return gate.handleCall({ tool: 'lookup', arguments: { key: `k${i}` }, meta: {} }, () => held.then(answered));
    });
    const decided: number[] = [];
    for (const [i, release] of releases.entries()) {
      release();
      const outcome = await calls[i];
      assert.equal(outcome.kind, 'forwarded');
      decided.push((outcome as { entry: number }).entry);
    }
    await idle();
    // The last one only when its result was not written yet (a group that ended may take it first).
    assert.ok(sealedAhead.length <= 1 && sealedAhead.every((d) => d === decided[7]), `sealed ahead: ${JSON.stringify(sealedAhead)}, decided ${JSON.stringify(decided)}`);
  } finally {
    Ledger.prototype.preseal = preseal;
    await opened.close('test');
  }
  const entries = ledgerOf(home);
  assert.equal(entries.filter((e) => e.kind === 'result' && e.outcome === 'ok').length, 8);
  const v = cloakpipe(['verify', '--home', home]);
  assert.equal(v.status, 0, v.stdout + v.stderr);
});
