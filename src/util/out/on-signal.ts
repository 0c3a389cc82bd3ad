// A command ended by a signal (Ctrl-C, SIGTERM, a closed terminal) while an --out file is being
// written: its temporary file is removed, the target left as it was, and the command ends as
// the signal ends a program. A long export stopped with Ctrl-C left a hidden .NAME.HEX.tmp as
// large as the export beside its target. Only where nothing else listens for the signal: a
// server's own shutdown is not cut short.
import type { Output } from '../atomic-write.js';

const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
const unfinished = new Set<Output>();
let armed: NodeJS.Signals[] = [];

function endBySignal(signal: NodeJS.Signals): void {
  for (const o of unfinished) o.abort();
  unfinished.clear();
  disarm();
  process.kill(process.pid, signal); // no listener left: the default action
}

function disarm(): void {
  for (const s of armed) process.removeListener(s, endBySignal);
  armed = [];
}

/** Disarmed not at once: a signal that came during the last stretch is handled first (else it is lost). */
function disarmSoon(): void {
  if (unfinished.size === 0) setImmediate(() => unfinished.size === 0 && disarm());
}

/** `open()`'s output, taken back if a signal ends the command before it is committed. */
export function removedOnSignal(open: () => Output): Output {
  // Armed before the temporary file exists: a signal that comes while it is created waits for
  // the handler, which then finds it.
  if (armed.length === 0) {
    armed = SIGNALS.filter((s) => process.listenerCount(s) === 0);
    for (const s of armed) process.on(s, endBySignal);
  }
  let o: Output;
  try {
    o = open();
  } catch (e) {
    disarmSoon();
    throw e;
  }
  unfinished.add(o);
  const settled = () => {
    unfinished.delete(o);
    disarmSoon();
  };
  return {
    write: (data) => o.write(data),
    commit() {
      o.commit();
      settled();
    },
    abort() {
      o.abort();
      settled();
    },
  };
}
