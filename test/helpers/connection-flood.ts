// What the connection-cap tests of the three HTTP servers share (ADR 085): idle sockets opened at
// once against a server's --max-connections, those past the bound closed by it at once.
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import net from 'node:net';

const descriptors = (pid: number) => readdirSync(`/proc/${pid}/fd`).length;

/**
 * Opens `flood` idle sockets to `url` (the server is process `pid`, `what` in messages) and
 * asserts that those past `cap` are closed within 5 s, well inside the 10 s the bound on headers
 * gives an idle connection, and that the server holds at most `cap` more descriptors meanwhile.
 * The sockets are destroyed before it returns, and the server has let theirs go (or 5 s passed):
 * a client connecting before it has is still past the bound, and is reset.
 */
export async function floodIdle(url: URL, pid: number, flood: number, cap: number, what: string): Promise<void> {
  const before = descriptors(pid);
  let closed = 0;
  const sockets = await Promise.all(
    Array.from(
      { length: flood },
      () =>
        new Promise<net.Socket>((resolve) => {
          const s = net.connect(Number(url.port), url.hostname, () => resolve(s));
          s.on('data', () => undefined); // read what the server says (a 408), or its close is never seen
          s.on('close', () => closed++);
          s.on('error', () => undefined);
        }),
    ),
  );
  try {
    const deadline = Date.now() + 5000;
    while (closed < flood - cap && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    assert.equal(closed, flood - cap, `of ${flood} idle sockets, ${closed} were closed within 5 s`);
    const held = descriptors(pid) - before;
    assert.ok(held <= cap, `${what} holds ${held} more descriptors during the flood`);
  } finally {
    for (const s of sockets) s.destroy();
    const deadline = Date.now() + 5000;
    while (descriptors(pid) > before && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  }
}
