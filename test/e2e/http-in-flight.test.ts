// --max-in-flight over HTTP (product.md 7a): past the bound the gate reads no more of the host
// (each POST beyond it waits, open, its body unread by the relay) until a call ends; nothing is
// refused and nothing reaches the upstream early. The upstream holds each call until the test
// lets it answer, so what the upstream has seen at each moment is exact.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { makeHome, writeFiles, PERMIT_ALL } from '../helpers/cli.js';
import { httpClient, startHttpGate } from '../helpers/http-gate.js';
import { CANARY, startRawUpstream, type RawUpstream } from '../helpers/misbehaving-http-upstream.js';

let raw: RawUpstream | undefined;
after(async () => {
  await raw?.close();
});

const settle = () => new Promise((r) => setTimeout(r, 300));

for (const bound of [2, 3]) {
  test(`--max-in-flight ${bound}: call ${bound + 1} of one session waits for a call to end, then runs; all are answered`, async () => {
    raw = await startRawUpstream();
    const f = writeFiles({ 'm.yaml': 'version: 1\nrelease: held@1\ntools:\n  held: { effect: read, arguments: { n: { type: integer } } }\n', 'p.cedar': PERMIT_ALL });
    const g = await startHttpGate({ home: makeHome(), manifest: f['m.yaml'], policy: f['p.cedar'], flags: ['--max-in-flight', String(bound), '--upstream-url', raw.url], upstream: [] });
    const c = await httpClient(g.url);
    const total = bound + 3;
    const calls = Array.from({ length: total }, (_, n) => c.callTool({ name: 'held', arguments: { n } }));
    await raw.heldCount(bound);
    await settle();
    // The bound holds: nothing more reached the upstream while `bound` calls are in flight.
    assert.equal(raw.held.length, bound);
    // One ends: exactly one more is read and forwarded.
    raw.held.shift()!();
    await raw.heldCount(bound);
    await settle();
    assert.equal(raw.held.length, bound);
    // Let everything through: every call is answered, none refused.
    let answered = 1;
    while (answered < total) {
      await raw.heldCount(1);
      raw.held.shift()!();
      answered++;
    }
    const results = await Promise.all(calls);
    assert.equal(results.length, total);
    for (const r of results) assert.match((r.content as { text: string }[])[0].text, new RegExp(`held ${CANARY}`));
    await c.close();
    assert.equal(await g.stop(), 0);
    await raw.close();
    raw = undefined;
  });
}
