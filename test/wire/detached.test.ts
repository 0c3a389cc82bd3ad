// What the strict parser reads shares no memory with the message: a member the gate keeps after
// the message is gone (a call id, a tool name; plain, escaped or long) does not keep the message,
// and the arguments in it, alive. Checked on a heap snapshot, which holds every live string.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { parseStrict } from '../../src/wire/strict-parse.js';
import type { JsonObject } from '../../src/core/json.js';
import { ownHeapSnapshot } from '../helpers/heap.js';

const heapHolds = async (text: string) => (await ownHeapSnapshot()).includes(text);

/** Members of a message read by the parser, the message itself dropped. */
function membersOf(secret: string): string[] {
  const line = JSON.stringify({
    jsonrpc: '2.0',
    id: 'call_0123456789abcdef', // a slice of 13 or more characters
    method: 'tools/call',
    params: { name: 'a-tool-with-a-long-name', arguments: { secret }, note: 'line one\nline two and more', [`key-of-its-own-${'k'.repeat(20)}`]: 1 },
  });
  const m = parseStrict(line) as JsonObject;
  const p = m.params as JsonObject;
  return [m.id as string, p.name as string, p.note as string, ...Object.keys(p)];
}

test('strings the parser read keep nothing of the message they came from', async () => {
  const tag = randomUUID();
  const kept = membersOf(`secret-${tag}`);
  assert.deepEqual(kept.slice(0, 3), ['call_0123456789abcdef', 'a-tool-with-a-long-name', 'line one\nline two and more']);
  // In a snapshot the message would be a JSON string with its quotes escaped.
  assert.equal(await heapHolds(`\\"secret\\":\\"secret-${tag}\\"`), false, 'a kept member holds the whole message');
  assert.ok(await heapHolds('a-tool-with-a-long-name'), 'the search finds what is there');
  assert.equal(kept.length, 7);
});
