// A label rise the store cannot record when it happens (a full disk) is recorded once the store
// takes entries again: the session's label rose in memory at once (sinks below it refused), and
// the ledger must say why, or an auditor reads refusals under a label no entry raised. Before,
// the rise of server output was dropped with its failed transaction. The real gate binary, its
// home on a tmpfs that really fills, server-everything's prompts/get as the output.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { EVERYTHING, cloakpipe, fixtureFiles, PERMIT_ALL } from '../helpers/cli.js';
import { call, ledgerOf, startGate } from '../helpers/gate.js';
import { mountSmallDisk, smallDiskSkip } from '../helpers/small-disk.js';

const MARKER = 'ACCT-31415926';
const MANIFEST = `version: 1
release: flow-label-disk-full@1
labels: [public, internal]
tools:
  get-sum: { effect: read, accepts: public, arguments: { a: { type: number, required: true }, b: { type: number, required: true } } }
classify:
  - { label: internal, pattern: "ACCT-[0-9]{8}" }
`;

test('a label rise made while the disk is full is recorded once there is space again', smallDiskSkip, async (t: TestContext) => {
  const disk = mountSmallDisk(16);
  t.after(() => disk.unmount());
  const home = join(disk.dir, 'home');
  const init = cloakpipe(['init', '--home', home]);
  assert.equal(init.status, 0, init.stderr);
  const f = fixtureFiles('cloakpipe-label-disk-', { manifest: MANIFEST, policy: PERMIT_ALL, context: { task: { id: 'T-label-disk' } }, home });
  const g = await startGate({ ...f, upstream: [process.execPath, EVERYTHING] });
  try {
    disk.fill();
    const prompt = await g.client.getPrompt({ name: 'args-prompt', arguments: { city: MARKER } }, { timeout: 20_000 });
    assert.equal(prompt.messages.length, 1, 'the host got it');
    disk.free();
    const sink = await call(g, 'get-sum', { a: 1, b: 2 });
    assert.equal(sink.ok ? 'ok' : sink.reason, 'sink_ceiling_exceeded', 'the label rose in memory');
  } finally {
    await g.close();
  }
  const entries = ledgerOf(home);
  assert.deepEqual(entries.filter((e) => e.kind === 'label').map((e) => [e.from, e.to, e.cause]), [['public', 'internal', 'classify']]);
  assert.ok(!JSON.stringify(entries).includes(MARKER), 'no output in the ledger');
  const v = cloakpipe(['verify', '--home', home]);
  assert.equal(v.status, 0, v.stdout + v.stderr);
});
