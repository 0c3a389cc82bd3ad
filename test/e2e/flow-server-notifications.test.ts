// Server output outside a tool's result raises the label by what it holds, as a result would:
// a progress notification's message, a logging notification's data, a completion's values. The
// host shows each to its user or model. The real binary, the official SDK client as the host,
// a server that puts a marked text in each (marking-server.ts); a plain run is the control.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { call, summary } from '../helpers/gate.js';
import { afterMarked, MARKER } from '../helpers/marking.js';

const raised = (r: { sink: string; labels: string[][] }) => {
  assert.deepEqual(r.labels, [['confidential', 'classify']]);
  assert.equal(r.sink, 'sink_ceiling_exceeded');
};

test('a progress notification holding a marker raises the label', { timeout: 120_000 }, async () => {
  const seen: string[] = [];
  raised(
    await afterMarked(async (g) => {
      // The client's own handler, not onprogress: the SDK handles a notification a microtask
      // late and an answer at once, so progress arriving with its answer found onprogress gone.
      const { ProgressNotificationSchema } = await import('@modelcontextprotocol/sdk/types.js');
      g.client.setNotificationHandler(ProgressNotificationSchema, (n) => void seen.push(String(n.params.message)));
      await g.client.callTool({ name: 'progress', arguments: {} }, undefined, { timeout: 20_000, onprogress: () => undefined }); // onprogress: the call carries a progress token
      for (let i = 0; i < 100 && !seen.some((m) => m.includes(MARKER)); i++) await new Promise((r) => setTimeout(r, 20)); // bounded
      assert.ok(seen.some((m) => m.includes(MARKER)), 'the host got the progress message');
    }),
  );
});

test('a logging notification holding a marker raises the label', { timeout: 120_000 }, async () => {
  raised(
    await afterMarked(async (g) => {
      let logged = false;
      const { LoggingMessageNotificationSchema } = await import('@modelcontextprotocol/sdk/types.js');
      g.client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => void (logged ||= String(n.params.data).includes(MARKER)));
      assert.equal(summary(await call(g, 'log', {})), 'ok');
      for (let i = 0; i < 100 && !logged; i++) await new Promise((r) => setTimeout(r, 20)); // the notification came first; bounded
      assert.ok(logged, 'the host got the log message');
    }),
  );
});

test('a completion/complete answer holding a marker raises the label', { timeout: 120_000 }, async () => {
  raised(
    await afterMarked(async (g) => {
      const r = await g.client.complete({ ref: { type: 'ref/prompt', name: 'any' }, argument: { name: 'account', value: 'quix' } }, { timeout: 20_000 });
      assert.ok(r.completion.values.some((v) => v.includes(MARKER)), 'the host got the completion');
    }),
  );
});

test('a tool whose notifications and result hold no marker raises nothing (control)', { timeout: 120_000 }, async () => {
  const r = await afterMarked(async (g) => assert.equal(summary(await call(g, 'post', {})), 'ok'));
  assert.deepEqual(r.labels, []);
  assert.equal(r.sink, 'ok');
});
