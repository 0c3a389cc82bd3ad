// A file's change stamp (inode, size, mtime, ctime): how the gate notices that the task context,
// the manifest or the policy was replaced (product.md 7a, ADR 019) without reading them.
// Read at most once per path per turn of the event loop (ADR 032): every call decided in one
// turn arrived before that turn began (a call arrives in an I/O callback, a turn of its own),
// so a change finished before a call arrived is still seen by that call's decision, while a
// group of 64 decisions pays for one stat instead of 64.
import { statSync } from 'node:fs';

const seen = new Map<string, string>();
let clearing = false;

function statNow(path: string): string {
  try {
    const st = statSync(path, { bigint: true });
    return `${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}`;
  } catch (e) {
    return `unreadable:${(e as NodeJS.ErrnoException).code ?? 'error'}`;
  }
}

/** The stamp of `path` as of this turn; "unreadable:CODE" when it cannot be stat'ed. */
export function fileStamp(path: string): string {
  let stamp = seen.get(path);
  if (stamp === undefined) {
    stamp = statNow(path);
    seen.set(path, stamp);
    if (!clearing) {
      clearing = true;
      // Microtasks run before the next I/O callback: no call can arrive while a stamp is kept.
      queueMicrotask(() => {
        seen.clear();
        clearing = false;
      });
    }
  }
  return stamp;
}
