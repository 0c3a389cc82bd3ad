// What the evidence suites share (evidence.test.ts against a Rekor v1 log, evidence-rekor-v2.test.ts
// against v2): a real RFC 3161 TSA (openssl) and the in-repo log started before the suite, their
// trust files, an echo manifest, the real gate binary in front of server-everything driven with
// raw lines, and `cloakpipe verify`.
import { before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { writeFileSync } from 'node:fs';
import { EVERYTHING, writeFiles, cloakpipe, makeHome, tempDir, PERMIT_ALL } from './cli.js';
import { ledgerOf } from './gate.js';
import { RawGate } from './raw-gate.js';
import { startOpensslTsa, type TestTsa } from './openssl-tsa.js';
import { startFakeRekor, type FakeRekor } from './fake-rekor.js';

export interface EvidenceSuite {
  tsa: TestTsa;
  rekor: FakeRekor;
  files: Record<string, string>;
  trust: { tsaRoot: string; rekorKey: string };
  /** The gate on `home` with these flags (anchorFlags), in front of server-everything. */
  gate(home: string, flags: string[]): RawGate;
  /** The flags that anchor to this suite's TSA (or another URL) and log. */
  anchorFlags(tsaUrl: string, interval?: string): string[];
  /** One echo call; what else the server says meanwhile is skipped. */
  echo(g: RawGate, message: string): Promise<void>;
  verify(home: string, ...extra: string[]): ReturnType<typeof cloakpipe>;
  /**
   * A gate anchoring every second on a fresh home: three echoes, a few intervals, `more` echoes,
   * a clean end (exit 0). Its home, stderr and ledger entries.
   */
  anchoredSession(more: number): Promise<{ home: string; stderr: string; entries: Record<string, any>[] }>;
}

/** Start the TSA and the log before the suite's tests and stop them after. The fields are set in before(). */
export function evidenceSuite(o: { release: string; tsaName: string; rekor?: Parameters<typeof startFakeRekor>[0] }): EvidenceSuite {
  const s = {} as EvidenceSuite;
  before(async () => {
    [s.tsa, s.rekor] = await Promise.all([startOpensslTsa(o.tsaName), startFakeRekor(o.rekor)]);
    const manifest = `version: 1\nrelease: ${o.release}\ntools:\n  echo:\n    effect: read\n    arguments:\n      message: { type: string, max_len: 200, required: true }\n`;
    s.files = writeFiles({ 'm.yaml': manifest, 'p.cedar': PERMIT_ALL, 'c.json': { task: { id: 'T-1' } } });
    const dir = tempDir();
    s.trust = { tsaRoot: join(dir, 'tsa.pem'), rekorKey: join(dir, 'rekor.pem') };
    writeFileSync(s.trust.tsaRoot, s.tsa.chainPem);
    writeFileSync(s.trust.rekorKey, s.rekor.publicKeyPem);
  });
  after(async () => {
    await Promise.all([s.tsa?.close(), s.rekor?.close()]);
  });
  let nextId = 1;
  s.gate = (home, flags) =>
    new RawGate({ home, manifest: s.files['m.yaml'], policy: s.files['p.cedar'], context: s.files['c.json'], flags, upstream: [process.execPath, EVERYTHING, 'stdio'] });
  s.anchorFlags = (tsaUrl, interval) => [
    ...(interval ? ['--anchor-interval', interval] : []),
    '--tsa', tsaUrl, '--tsa-root', s.trust.tsaRoot, '--rekor', s.rekor.url, '--rekor-key', s.trust.rekorKey,
  ];
  s.echo = async (g, message) => {
    const id = nextId++;
    g.send(JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'echo', arguments: { message } } }) + '\n');
    // Skip what else the server says (notifications, late answers to the initialize handshake).
    let r = await g.next();
    while (r.id !== id) r = await g.next();
    assert.ok(r.result, JSON.stringify(r.error));
  };
  s.verify = (home, ...extra) => cloakpipe(['verify', '--home', home, ...extra], { timeout: 120_000 });
  s.anchoredSession = async (more) => {
    const home = makeHome();
    const g = s.gate(home, s.anchorFlags(s.tsa.url, '1s'));
    await g.initialize();
    for (let i = 0; i < 3; i++) await s.echo(g, `first ${i}`);
    await new Promise((r) => setTimeout(r, 2500)); // let a few intervals pass (nothing asserts on how many)
    for (let i = 0; i < more; i++) await s.echo(g, `second ${i}`);
    assert.equal(await g.end(), 0, g.stderr);
    return { home, stderr: g.stderr, entries: ledgerOf(home) };
  };
  return s;
}
