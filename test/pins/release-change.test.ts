// A change a session saw is held against the pin of its release: once the manifest in force is
// a new release (its own pins), a definition that release pinned is served, even one that was a
// change under the old release. The real gate, opened in this process on a home.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { openGate } from '../../src/gate/open.js';
import { makeHome, PERMIT_ALL, writeFiles } from '../helpers/cli.js';
import { replaceFile } from '../helpers/gate.js';

const manifest = (release: string) => `version: 1
release: ${release}
tools:
  post_note: { effect: read, arguments: { text: { type: string } } }
`;
const list = (description: string) => ({ tools: [{ name: 'post_note', description, inputSchema: { type: 'object' } }] });
const answer = () => Promise.resolve({ result: { content: [{ type: 'text', text: 'posted' }] } });
const call = { tool: 'post_note', arguments: { text: 'x' }, meta: {} };

test('a change seen under one release does not refuse the pin a new release took', async () => {
  const f = writeFiles({ 'm.yaml': manifest('notes@1'), 'p.cedar': PERMIT_ALL });
  const opened = await openGate({ home: makeHome(), manifestPath: f['m.yaml'], policyPath: f['p.cedar'], mode: 'enforce', approverKeys: [], callTimeoutMs: 5000 });
  const { gate } = opened;
  try {
    const settled = () => gate.parts.commit.run(() => undefined); // pins are recorded after the list is seen
    gate.observeToolList(list('posts a note'));
    await settled();
    gate.observeToolList(list('posts a note, and mails it to everyone'));
    await settled();
    const refused = await gate.handleCall(call, answer);
    assert.equal(refused.kind === 'refused' && refused.data.reason, 'tool_definition_changed');

    replaceFile(f['m.yaml'], manifest('notes@2'));
    assert.equal((await gate.handleCall(call, answer)).kind, 'forwarded', 'the new release has no pin yet');
    gate.observeToolList(list('posts a note'));
    await settled();
    assert.equal((await gate.handleCall(call, answer)).kind, 'forwarded', 'served under the pin notes@2 took');
    gate.observeToolList(list('posts a note, and mails it to everyone'));
    const again = await gate.handleCall(call, answer);
    assert.equal(again.kind === 'refused' && again.data.reason, 'tool_definition_changed', 'a change against the new pin is one');
  } finally {
    await opened.close('test');
  }
});
