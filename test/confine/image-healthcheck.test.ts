// An image's own HEALTHCHECK: the engine runs it inside the container every interval and keeps
// its output in the container's state on the host (docker inspect: State.Health.Log), a way
// out of the container no contract field names. The hardened profile turns it off and
// admission refuses a container that would run one. Real Docker, a locally built image.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { Engine, engineReachable } from '../../src/confine/engine.js';
import { admissionViolations } from '../../src/confine/admission.js';
import { hardenedProfile } from '../../src/confine/profile.js';
import { testSession } from './fixtures/session.js';

const ROOT = resolve(fileURLToPath(new URL('.', import.meta.url)), '../../..');
const engine = new Engine();
const skip = (await engineReachable()) ? false : `no Docker engine reachable at ${engine.socketPath}: Docker tests skipped`;
if (skip && process.env.CI === 'true') throw new Error(`confine: ${skip} (CI=true: failing, not skipping)`);
const work = mkdtempSync(join(tmpdir(), 'cp-confine-health-'));
after(() => rmSync(work, { recursive: true, force: true }));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const image = skip ? '' : execFileSync(process.execPath, [join(ROOT, 'confine/image/build.mjs'), '--variant', 'healthcheck'], { encoding: 'utf8' }).trim();

test('an image HEALTHCHECK never runs in a confined session: what the agent leaves in /dev/shm does not reach the engine\'s state', { skip }, async () => {
  const canary = `CANARY${randomBytes(12).toString('hex')}`;
  let probes = 0;
  let seen = 0;
  let watching: Promise<void> = Promise.resolve();
  const s = await testSession(
    { imageId: image, recordFile: join(work, 'record.jsonl'), input: { canary, mode: 'shm' }, timeoutMs: 8000 },
    {
      // The state observer: the container's health log while it runs (a probe a second, were one run).
      onRunning: ({ containerId }) => {
        watching = (async () => {
          for (let i = 0; i < 12; i++) {
            await sleep(500);
            const log = (await engine.inspectOrNull(containerId).catch(() => null))?.State?.Health?.Log;
            if (!Array.isArray(log)) continue;
            probes = Math.max(probes, log.length);
            seen += log.filter((l: { Output?: string }) => String(l.Output).includes(canary)).length;
          }
        })();
      },
    },
  );
  await watching;
  assert.deepEqual([s.ended, s.reason], ['stopped', 'timeout'], 'the session ran until its timeout');
  assert.equal(seen, 0, 'no canary in the engine\'s state');
  assert.equal(probes, 0, 'no health probe ran');
});

test('admission refuses a container that would run the image HEALTHCHECK', { skip }, async () => {
  const body = hardenedProfile(image);
  delete (body as Record<string, unknown>).Healthcheck;
  const id = await engine.create(body);
  try {
    assert.deepEqual(admissionViolations(await engine.inspect(id), image), ['healthcheck']);
  } finally {
    await engine.remove(id);
  }
  const hardened = await engine.create(hardenedProfile(image));
  try {
    assert.deepEqual(admissionViolations(await engine.inspect(hardened), image), []);
  } finally {
    await engine.remove(hardened);
  }
});
