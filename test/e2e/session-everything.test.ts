// A session with @modelcontextprotocol/server-everything (tools of every content type, progress,
// resources, templates, prompts, completion, logging), through the real gate and straight to
// the server, compared call by call (test/helpers/session-pair.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EVERYTHING } from '../helpers/cli.js';
import { pairedSession } from '../helpers/session-pair.js';
import { MANIFEST, STEPS } from '../helpers/everything-session.js';

const run = pairedSession('everything', STEPS, { manifest: MANIFEST, command: [process.execPath, EVERYTHING, 'stdio'] });

test('everything: the long-running operation\'s three progress notifications all pass through', () => {
  const k = STEPS.findIndex((s) => s.label === 'trigger-long-running-operation with progress');
  const { direct, gated } = run();
  assert.deepEqual([gated[k]?.ok && gated[k].progress, direct[k]?.ok && direct[k].progress], [3, 3]);
});
