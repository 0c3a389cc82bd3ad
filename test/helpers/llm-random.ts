// What the LLM door's random-stream properties draw from: a seeded generator (a failure names
// its seed), text cut anywhere, and the calls a random response proposes, some allowed, some not;
// and the property itself: every call an agent ran is one the gate allowed.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { digestJson } from '../../src/core/digest.js';
import { openLedgerSnapshot } from '../../src/store/sqlite/store.js';

/**
 * A small seeded generator, so that a failure names the stream that caused it. The seed is mixed
 * and the first outputs dropped: xorshift from a small seed starts near 0, so every stream's first
 * pick was the same call.
 */
export function rng(seed: number) {
  let x = Math.imul(seed, 0x9e3779b1) >>> 0 || 1;
  const next = () => ((x ^= x << 13), (x ^= x >>> 17), (x ^= x << 5), (x >>> 0) / 2 ** 32);
  for (let i = 0; i < 8; i++) next();
  return { next, int: (n: number) => Math.floor(next() * n), pick: <T>(a: readonly T[]) => a[Math.floor(next() * a.length)] };
}

export function cuts(r: ReturnType<typeof rng>, text: string, most: number): string[] {
  const out: string[] = [];
  let rest = text;
  while (rest.length > 0 && out.length < most - 1) {
    const n = r.int(rest.length + 1);
    out.push(rest.slice(0, n));
    rest = rest.slice(n);
  }
  out.push(rest);
  return out;
}

/** Calls to stream; `text`, when given, is how the arguments are spelled (escapes, exponents, spaces). */
export const CALLS: { name: string; args: object; text?: string }[] = [
  { name: 'get_weather', args: { city: 'Paris' } },
  { name: 'get_weather', args: { city: 'Zürich "quoted"' } },
  { name: 'get_weather', args: { city: 'été' }, text: '{ "city" : "\\u00e9t\\u00e9" }' },
  { name: 'transfer', args: { amount: 20 } },
  { name: 'transfer', args: { amount: 100 }, text: '{"amount":1E2}' },
  { name: 'transfer', args: { amount: 5000 } },
  { name: 'read_file', args: { path: '/srv/notes/a.md' } },
];
export const argsText = (c: (typeof CALLS)[number]) => c.text ?? JSON.stringify(c.args);

/** The seq the gate's next entry will have (seqs run from 0 without a gap), read as it runs. */
export function nextSeq(home: string): number {
  const l = openLedgerSnapshot(join(home, 'ledger.db')); // the read-only snapshot verify and export use
  try {
    return l.total;
  } finally {
    l.close();
  }
}

/**
 * Every call an agent ran is one the gate allowed from entry `from` on: of the format's one kind
 * of call, the same name and the same arguments (digest for digest), each allowed call once.
 */
export function assertAllowed(home: string, from: number, calls: { type: string; name: unknown; args: unknown }[], kind: string): void {
  if (calls.length === 0) return;
  const l = openLedgerSnapshot(join(home, 'ledger.db'));
  let made: Record<string, unknown>[];
  try {
    made = [...l.bodies(from)].map((b) => JSON.parse(b) as Record<string, unknown>);
  } finally {
    l.close();
  }
  const allowed = made.filter((e) => e.kind === 'decision' && e.outcome === 'allow');
  for (const c of calls) {
    assert.equal(c.type, kind, `a call of kind ${c.type} reached the agent`);
    const match = allowed.findIndex((e) => e.tool === c.name && e.args_digest === digestJson(c.args));
    assert.ok(match >= 0, `the agent got ${JSON.stringify(c.name)} with arguments the gate never allowed (allowed: ${JSON.stringify(allowed.map((e) => e.tool))})`);
    allowed.splice(match, 1);
  }
}
