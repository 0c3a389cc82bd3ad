// A server that changes a pinned tool's definition and then shows the pinned one again has not
// undone anything: the host may hold either, and the server can flip again at will. The changed
// tool stays refused tool_definition_changed, in this session and the next, until
// `cloakpipe pins accept`. Official SDK client through the real binary, an SDK server that flips;
// on the embedded store and on a fleet's PostgreSQL (read only inside a transaction).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cloakpipe, helperScript, makeHome, PERMIT_ALL, writeFiles } from '../helpers/cli.js';
import { call, startGate, summary } from '../helpers/gate.js';
import { freshDatabase, initGate } from '../helpers/fleet.js';
import { pgSkip } from '../store/postgres/pg.js';

const MANIFEST = `version: 1
release: rug@1
tools:
  echo: { effect: read, arguments: { text: { type: string } } }
  flip: { effect: read, arguments: {} }
`;

const descriptionOf = async (g: Awaited<ReturnType<typeof startGate>>) =>
  (await g.client.listTools()).tools.find((t) => t.name === 'echo')?.description ?? '';

async function flipBack(store?: string): Promise<void> {
  const f = writeFiles({ 'm.yaml': MANIFEST, 'p.cedar': PERMIT_ALL });
  const home = store ? initGate(store, 'rug') : makeHome();
  const flags = store ? ['--store', store] : [];
  const start = () => startGate({ home, manifest: f['m.yaml'], policy: f['p.cedar'], flags, upstream: [process.execPath, helperScript('rug-pull-server.js')] });
  const cli = (args: string[]) => cloakpipe([...args, '--home', home, ...flags]);
  let g = await start();
  assert.equal(await descriptionOf(g), 'Echo the text back', 'pinned on first sight');
  assert.equal(summary(await call(g, 'echo', { text: 'a' })), 'ok');

  assert.equal(summary(await call(g, 'flip', {})), 'ok');
  assert.match(await descriptionOf(g), /ops mailbox/);
  assert.match(summary(await call(g, 'echo', { text: 'b' })), /^tool_definition_changed/);

  // The server shows the reviewed definition again: nothing an operator reviewed says so.
  assert.equal(summary(await call(g, 'flip', {})), 'ok');
  assert.equal(await descriptionOf(g), 'Echo the text back');
  assert.match(summary(await call(g, 'echo', { text: 'c' })), /^tool_definition_changed/, 'still refused in this session');
  await g.close();

  g = await start();
  assert.equal(await descriptionOf(g), 'Echo the text back');
  assert.match(summary(await call(g, 'echo', { text: 'd' })), /^tool_definition_changed/, 'still refused after a restart');
  await g.close();

  const rows = JSON.parse(cli(['pins', 'list', '--json']).stdout);
  assert.notEqual(rows.find((r: any) => r.tool === 'echo').observed, null, 'awaiting review');
  assert.equal(cli(['pins', 'accept', '--tool', 'echo']).status, 0);

  // Accepted: the definition reviewed last (the steering one) is the pin now, and served.
  g = await start();
  assert.equal(summary(await call(g, 'flip', {})), 'ok');
  assert.match(await descriptionOf(g), /ops mailbox/);
  assert.equal(summary(await call(g, 'echo', { text: 'e' })), 'ok', 'the accepted definition is served');
  // The server's other definition is a change against the new pin, and held as one too.
  assert.equal(summary(await call(g, 'flip', {})), 'ok');
  assert.equal(await descriptionOf(g), 'Echo the text back');
  assert.equal(summary(await call(g, 'flip', {})), 'ok');
  assert.match(await descriptionOf(g), /ops mailbox/);
  assert.match(summary(await call(g, 'echo', { text: 'f' })), /^tool_definition_changed/);
  await g.close();

  const entries = JSON.parse(`[${cli(['ledger', 'show', '--json']).stdout.trim().split('\n').join(',')}]`);
  const facts = entries.filter((e: any) => e.kind === 'pins').map((e: any) => `${e.action}:${e.tool}`);
  assert.ok(facts.includes('changed:echo') && !facts.includes('restored:echo'), 'a definition shown again is no restoration');
  assert.ok(!JSON.stringify(entries).includes('ops mailbox'), 'only digests of definitions are recorded');
}

test('a tool changed and then shown as pinned again stays refused until accepted', { timeout: 180_000 }, () => flipBack());

test('the same on a fleet\'s PostgreSQL store', { timeout: 180_000, ...pgSkip }, async () => flipBack(await freshDatabase()));
