// One gate, several sessions (gate/session.ts): each call names its session, so the flow
// label one session's agent has earned never reaches another's, and what a session's server
// showed of its tools is that session's view. The real gate, opened in this process on a home.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { openGate } from '../../src/gate/open.js';
import type { RelayGate } from '../../src/doors/relay.js';
import type { Gate } from '../../src/gate/gate.js';
import { makeHome, PERMIT_ALL, writeFiles } from '../helpers/cli.js';

const MANIFEST = `version: 1
release: sessions@1
tools:
  read_secret:
    effect: read
    returns: confidential
  post_public:
    effect: read
    accepts: public
    arguments:
      text: { type: string }
`;

/** A test body run against one gate (the manifest above, permit-all), closed afterwards. */
function withGate(body: (gate: Gate) => Promise<void>): () => Promise<void> {
  return async () => {
    const f = writeFiles({ 'm.yaml': MANIFEST, 'p.cedar': PERMIT_ALL });
    const opened = await openGate({ home: makeHome(), manifestPath: f['m.yaml'], policyPath: f['p.cedar'], mode: 'enforce', approverKeys: [], callTimeoutMs: 5000 });
    try {
      await body(opened.gate);
    } finally {
      await opened.close('test');
    }
  };
}

const answer = (text: string) => () => Promise.resolve({ result: { content: [{ type: 'text', text }] } });

test('two sessions of one gate: a label earned in one never refuses a call of the other', withGate(async (gate) => {
  const a = gate.openSession();
  const b = gate.openSession();
  assert.equal((await gate.handleCall({ tool: 'read_secret', arguments: {}, meta: {} }, answer('s3cret'), a)).kind, 'forwarded');
  assert.equal(a.label, 'confidential');
  assert.equal(b.label, 'public');
  assert.equal(gate.session.label, 'public', "the door's default session is a session of its own");
  const fromA = await gate.handleCall({ tool: 'post_public', arguments: { text: 'x' }, meta: {} }, answer('posted'), a);
  assert.equal(fromA.kind === 'refused' && fromA.data.reason, 'sink_ceiling_exceeded');
  const fromB = await gate.handleCall({ tool: 'post_public', arguments: { text: 'x' }, meta: {} }, answer('posted'), b);
  assert.equal(fromB.kind, 'forwarded');
  // A view binds a session for a relay: its calls are that session's.
  const c = gate.openSession();
  const relayGate: RelayGate = gate.view(c);
  assert.equal((await relayGate.handleCall({ tool: 'read_secret', arguments: {}, meta: {} }, answer('s3cret'))).kind, 'forwarded');
  assert.equal(c.label, 'confidential');
  assert.equal(b.label, 'public');
  // A replayed or forwarded answer raises only its own session; server output likewise.
  gate.observeServerOutput({ note: 'nothing sensitive' }, b);
  assert.equal(b.label, 'public');
}));

test("a change one session saw awaits review for every session: another that lists the pinned definition is refused too (ADR 090)", withGate(async (gate) => {
  const a = gate.openSession();
  const b = gate.openSession();
  const list = (description: string) => ({ tools: [{ name: 'post_public', description, inputSchema: { type: 'object' } }] });
  gate.observeToolList(list('posts a note'), a);
  await gate.parts.commit.run(() => undefined); // the pin is recorded after the list is seen: in this group or an earlier one
  gate.observeToolList(list('posts a note, and mails it to everyone'), a);
  const call = { tool: 'post_public', arguments: { text: 'x' }, meta: {} };
  const fromA = await gate.handleCall(call, answer('posted'), a);
  assert.equal(fromA.kind === 'refused' && fromA.data.reason, 'tool_definition_changed');
  await gate.parts.commit.run(() => undefined); // the change is recorded
  gate.observeToolList(list('posts a note'), b);
  const fromB = await gate.handleCall(call, answer('posted'), b);
  assert.equal(fromB.kind === 'refused' && fromB.data.reason, 'tool_definition_changed');
}));
