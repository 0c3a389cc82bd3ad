// A session with @modelcontextprotocol/server-everything (tools of every content type, progress,
// resources, templates, prompts, completion, logging), through the real gate and straight to
// the server, compared call by call (test/helpers/session-pair.ts).
import { before, after, test } from 'node:test';
import assert from 'node:assert/strict';
import { EVERYTHING, makeHome, writeFiles, PERMIT_ALL, cloakpipe } from '../helpers/cli.js';
import { startGate, type RunningGate } from '../helpers/gate.js';
import { defineSessionTests, runSession, type Outcome } from '../helpers/session-pair.js';

import { directSession, MANIFEST, STEPS } from '../helpers/everything-session.js';

let direct: (Outcome | null)[] = [];
let gated: (Outcome | null)[] = [];
let gate: RunningGate | undefined;
let home: string;

before(async () => {
  direct = await directSession();
  const f = writeFiles({ 'm.yaml': MANIFEST, 'p.cedar': PERMIT_ALL });
  home = makeHome();
  gate = await startGate({ home, manifest: f['m.yaml'], policy: f['p.cedar'], upstream: [process.execPath, EVERYTHING, 'stdio'] });
  gated = await runSession(gate.client, STEPS, true);
});

after(async () => {
  await gate?.close();
});

defineSessionTests('everything', STEPS, () => ({ direct, gated }));

test('everything: the long-running operation\'s three progress notifications all pass through', () => {
  const k = STEPS.findIndex((s) => s.label === 'trigger-long-running-operation with progress');
  assert.deepEqual([gated[k]?.ok && gated[k].progress, direct[k]?.ok && direct[k].progress], [3, 3]);
});

test('everything: the session left a ledger that verifies', () => {
  const v = cloakpipe(['verify', '--home', home]);
  assert.equal(v.status, 0, v.stderr);
});

test('everything: one refusal entry per refused call, and no other', () => {
  const entries = cloakpipe(['ledger', 'show', '--home', home, '--json']).stdout.trim().split('\n').map((l) => JSON.parse(l));
  const refusals = entries.filter((e) => e.kind === 'decision' && e.outcome === 'refuse').map((e) => e.reason);
  assert.deepEqual(refusals, STEPS.filter((s) => s.refusedBy).map((s) => s.refusedBy));
});
