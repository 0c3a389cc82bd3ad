// A host's last message with no newline before its stdin ends. MCP's stdio transport delimits
// messages by newlines, and the SDK's server never reads such a line: it was not completely
// sent (a host that died mid-write). The gate ran it: a write_file reached
// @modelcontextprotocol/server-filesystem and wrote the file. It is refused and recorded now,
// answered by its id, never forwarded.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { FILESYSTEM, cloakpipe, makeHome, tempDir, writeFiles, PERMIT_ALL } from '../helpers/cli.js';
import { RawGate, RawPeer } from '../helpers/raw-gate.js';
import { digestBytes } from '../../src/core/digest.js';

const MANIFEST = `version: 1
release: host-last-line@1
tools:
  write_file: { effect: write, arguments: { path: { type: string }, content: { type: string } } }
`;

let files: Record<string, string>;
before(() => {
  files = writeFiles({ 'm.yaml': MANIFEST, 'p.cedar': PERMIT_ALL });
});

/** A root for the server and the write_file line, sent last with no newline; resolves once the peer exited. */
async function lastLineWithoutNewline(peer: (root: string) => RawPeer, root: string): Promise<{ peer: RawPeer; line: string; target: string }> {
  const target = join(root, 'written.txt');
  const p = peer(root);
  await p.initialize();
  const line = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'write_file', arguments: { path: target, content: 'v1' } } });
  p.child.stdin!.end(line);
  await p.exited;
  return { peer: p, line, target };
}

const newRoot = () => {
  const root = join(tempDir(), 'root');
  mkdirSync(root);
  return root;
};

test('straight to server-filesystem, a last line without a newline is never run', { timeout: 120_000 }, async () => {
  const { target } = await lastLineWithoutNewline((root) => new RawPeer([process.execPath, FILESYSTEM, root]), newRoot());
  assert.equal(existsSync(target), false);
});

test('through the gate, it is refused malformed_json by its id and recorded, never forwarded', { timeout: 120_000 }, async () => {
  const home = makeHome();
  const { peer, line, target } = await lastLineWithoutNewline(
    (root) => new RawGate({ home, manifest: files['m.yaml'], policy: files['p.cedar'], upstream: [process.execPath, FILESYSTEM, root] }),
    newRoot(),
  );
  assert.equal(existsSync(target), false, 'the file was not written');
  const answer = await peer.next(1000);
  assert.equal(answer.id, 1);
  assert.equal(answer.error.data.reason, 'malformed_json', JSON.stringify(answer));
  const entries = cloakpipe(['ledger', 'show', '--home', home, '--json']).stdout.trim().split('\n').map((l) => JSON.parse(l));
  const decisions = entries.filter((e) => e.kind === 'decision');
  assert.deepEqual(decisions.map((e) => [e.outcome, e.reason, e.line_digest]), [['refuse', 'malformed_json', digestBytes(Buffer.from(line))]]);
});
