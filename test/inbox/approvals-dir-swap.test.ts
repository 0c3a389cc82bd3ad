// The approvals directory ($CLOAKPIPE_HOME/approvals/, src/approvals/inbox.ts) is read by the
// gate on every call that needs approval, and whoever can write there can put anything there. A
// file checked as a regular file and then opened by name could be something else by the time it
// was opened: a FIFO, whose open waits for a writer and the gate with it, on its main thread.
// Here a file is swapped with a FIFO as fast as renames go while a reader (a worker thread, so
// this test can see it stop) looks for candidates; the reader must never stop.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { closeSync, constants, linkSync, mkdtempSync, openSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';

const READER = `
const { workerData } = require('node:worker_threads');
import(workerData.module).then(({ Inbox }) => {
  const inbox = new Inbox(workerData.dir);
  const count = new Int32Array(workerData.count);
  for (;;) {
    inbox.candidates('sha256:' + '0'.repeat(64));
    Atomics.add(count, 0, 1);
  }
});
`;

test('a file swapped with a FIFO between its check and its open never stops the reader', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'cp-approvals-swap-'));
  // Both keep a name the reader ignores (not *.json): the FIFO can be opened for writing at the end, which frees a reader stuck on it.
  writeFileSync(join(dir, 'file'), '{"fingerprint":"sha256:1"}');
  execFileSync('mkfifo', [join(dir, 'fifo')]);
  linkSync(join(dir, 'file'), join(dir, 'r.json'));
  const count = new SharedArrayBuffer(4);
  const seen = new Int32Array(count);
  const worker = new Worker(READER, { eval: true, workerData: { module: new URL('../../src/approvals/inbox.js', import.meta.url).href, dir, count } });
  worker.unref();
  try {
    while (Atomics.load(seen, 0) === 0) await new Promise((r) => setTimeout(r, 10));
    let stalled = 0;
    let last = Atomics.load(seen, 0);
    let since = Date.now();
    for (const end = Date.now() + 3000, at = { i: 0 }; Date.now() < end; at.i++) {
      const from = at.i % 2 ? 'file' : 'fifo';
      linkSync(join(dir, from), join(dir, 'next'));
      renameSync(join(dir, 'next'), join(dir, 'r.json'));
      if (at.i % 64 === 0) {
        const now = Atomics.load(seen, 0);
        if (now !== last) [last, since] = [now, Date.now()];
        else if (Date.now() - since > 500) stalled++;
      }
    }
    assert.equal(stalled, 0, `the reader stopped (it has read ${last} times): it opened the FIFO and waits for a writer`);
  } finally {
    // Free a reader stuck in open(): a writer opens the FIFO and closes it.
    try {
      closeSync(openSync(join(dir, 'fifo'), constants.O_WRONLY | constants.O_NONBLOCK));
    } catch {
      // no reader waits on it
    }
    await worker.terminate();
  }
});
