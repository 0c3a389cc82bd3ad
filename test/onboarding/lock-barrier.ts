// Preloaded (node --import) into a real wrap run: its first attempt at the home's wrap lock waits
// until the file $CLOAKPIPE_TEST_BARRIER exists, so that two runs reach the lock together; it
// says it is waiting with a file BARRIER.PID. It changes when the run takes the lock, nothing of how.
import fs from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';

const barrier = process.env.CLOAKPIPE_TEST_BARRIER;
const open = fs.openSync;
let waited = false;
fs.openSync = function (this: unknown, ...a: Parameters<typeof fs.openSync>) {
  if (barrier && !waited && String(a[0]).endsWith('wrap.lock')) {
    waited = true;
    fs.writeFileSync(`${barrier}.${process.pid}`, '');
    const until = Date.now() + 30_000; // bounded: a test that never releases fails, not hangs
    while (!fs.existsSync(barrier) && Date.now() < until);
  }
  return open.apply(this, a);
} as typeof fs.openSync;
syncBuiltinESMExports();
