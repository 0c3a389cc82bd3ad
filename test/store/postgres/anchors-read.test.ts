// An anchoring round on a fleet's store reads the anchors of the epoch it anchors, not every
// anchor the chain ever stored: a gate anchoring every minute keeps two tokens an epoch (some
// kilobytes each), and reading them all each round grew without end (a month at one minute is
// some 86,000 rows, hundreds of MB a round). Bytes the database sends are counted through a
// proxy. Real binary, real PostgreSQL and an RFC 3161 TSA (openssl).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import net from 'node:net';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CLI, EVERYTHING, cloakpipe, fixtureFiles, tempDir } from '../../helpers/cli.js';
import { MANIFEST } from '../../helpers/everything-session.js';
import { freshDatabase, initGate, sql } from '../../helpers/fleet.js';
import { startOpensslTsa, type TestTsa } from '../../helpers/openssl-tsa.js';
import { pgSkip } from './pg.js';

let tsa: TestTsa | undefined;
let proxy: net.Server | undefined;
after(async () => {
  await tsa?.close();
  await new Promise((res) => (proxy ? proxy.close(res) : res(undefined)));
});

/** A TCP proxy to `target` counting the bytes the server sends back. */
async function countingProxy(target: string): Promise<{ url: string; received: () => number }> {
  const t = new URL(target);
  let n = 0;
  proxy = net.createServer((client) => {
    const server = net.connect(Number(t.port), t.hostname);
    client.on('data', (b) => server.write(b));
    server.on('data', (b) => ((n += b.length), client.write(b)));
    client.on('close', () => server.destroy());
    server.on('close', () => client.destroy());
    client.on('error', () => server.destroy());
    server.on('error', () => client.destroy());
  });
  await new Promise<void>((res) => proxy!.listen(0, '127.0.0.1', res));
  const u = new URL(target);
  u.port = String((proxy.address() as net.AddressInfo).port);
  return { url: u.toString(), received: () => n };
}

test('ledger anchor on PostgreSQL reads the anchors of its epoch, not every stored anchor', { ...pgSkip, timeout: 180_000 }, async () => {
  tsa = await startOpensslTsa('Fleet TSA');
  const root = join(tempDir(), 'tsa.pem');
  writeFileSync(root, tsa.chainPem);
  const url = await freshDatabase();
  const home = initGate(url, 'gate-a');
  const f = fixtureFiles('cloakpipe-anchors-read-', { manifest: MANIFEST, home });
  const g = cloakpipe(['mcp-proxy', '--home', home, '--store', url, '--manifest', f.manifest, '--policy', f.policy, '--', process.execPath, EVERYTHING, 'stdio'], { input: '', timeout: 60_000 });
  assert.equal(g.status, 0, g.stderr);
  // 400 earlier epochs' tokens of 8 KB each, as a long-running gate leaves them (3.2 MB in all).
  await sql(url, `INSERT INTO cloakpipe.anchors (gate_id, epoch_seq, kind, data) SELECT 'gate-a', 100000 + n, 'rfc3161', repeat('x', 8000) FROM generate_series(1, 400) n`);

  const p = await countingProxy(url);
  const r = await promisify(execFile)(process.execPath, [CLI, 'ledger', 'anchor', '--json', '--home', home, '--store', p.url, '--tsa', tsa.url, '--tsa-root', root], { timeout: 60_000 });
  const out = JSON.parse(r.stdout) as { sealed: boolean; anchors: { kind: string; ok: boolean }[] };
  assert.equal(out.sealed, true, r.stdout);
  assert.deepEqual(out.anchors, [{ kind: 'rfc3161', ok: true }]);
  assert.ok(p.received() < 512 * 1024, `the database sent ${p.received()} bytes for one round`);
});
