// Nothing the agent writes is handled before its container passed the second admission check
// (confinement.md: admission runs again right before the initial payload). An agent that
// writes a call as soon as it runs, in a container the second check refuses, reaches nothing.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { Engine, engineReachable } from '../../src/confine/engine.js';
import { observeRecord } from './fixtures/observers.js';
import { testSession } from './fixtures/session.js';

const ROOT = resolve(fileURLToPath(new URL('.', import.meta.url)), '../../..');
const engine = new Engine();
const skip = (await engineReachable()) ? false : `no Docker engine reachable at ${engine.socketPath}: Docker tests skipped`;
if (skip && process.env.CI === 'true') throw new Error(`confine: ${skip} (CI=true: failing, not skipping)`);
const work = mkdtempSync(join(tmpdir(), 'cp-confine-early-'));
after(() => rmSync(work, { recursive: true, force: true }));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test('a call the agent writes before its second admission check is never handled: the refused session delivers nothing', { skip }, async () => {
  const image = execFileSync(process.execPath, [join(ROOT, 'confine/image/build.mjs')], { encoding: 'utf8' }).trim();
  const canary = `CANARY${randomBytes(12).toString('hex')}`;
  const recordFile = join(work, 'record.jsonl');
  const s = await testSession(
    { imageId: image, recordFile, input: { mode: 'hold' } },
    {
      // The agent writes its call at once and exits; by the second check it is not running.
      weaken: (b) => (b.Env = [`AGENT_EARLY_FRAME=${canary}`]),
      onStarted: async (id) => {
        for (let i = 0; i < 100 && (await engine.inspectOrNull(id))?.State?.Running === true; i++) await sleep(100);
        await sleep(500); // time for the bridge to read what the agent wrote, were it reading
      },
    },
  );
  assert.deepEqual([s.ended, s.reason, s.violations], ['refused', 'admission', ['not_running']]);
  assert.equal(observeRecord(recordFile, canary).calls, 0, 'the upstream received nothing');
  assert.deepEqual([s.calls, s.allowed, s.denied], [0, 0, 0], 'no frame was read');
  assert.equal(await engine.inspectOrNull(s.container!), null, 'the container is gone');
});
