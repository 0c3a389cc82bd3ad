// Cedar's answers, kept per policy engine and reused for a request identical to one already
// decided. Cedar is a pure function of the policy set and the request (principal, action,
// resource, context, entities): no clock, no randomness, no state between calls. The key is the
// request exactly as it would cross into wasm (the bridge sends JSON.stringify of it), so an
// answer is reused only for the same bytes Cedar would read (ADR 039). Only decisions are kept:
// an evaluation that errors is evaluated again each time, and fails closed each time.
// Bounded: at most `maxEntries` keys of at most `maxKey` characters (a longer request, e.g. a
// long argument a policy reads, is simply not kept); the oldest key goes first.
// Kept by the request's SHA-256, never its text: the text holds the argument values a policy
// reads, and the gate keeps no value past its call (a heap snapshot of a running gate shows
// none: test/gate/no-values-kept.test.ts).
import { hash } from 'node:crypto';
import type { CedarAnswer } from './evaluate.js';

export class AnswerCache {
  private readonly map = new Map<string, CedarAnswer>();
  /** Evaluations done by Cedar, and answers reused (for tests and the benchmark). */
  readonly counts = { evaluated: 0, reused: 0 };

  constructor(
    private readonly maxEntries = 1024,
    private readonly maxKey = 2048,
  ) {}

  /** The answer for `request`, from the cache or from `evaluate` (which may throw: not kept). */
  answer(request: string, evaluate: () => CedarAnswer): CedarAnswer {
    const keep = request.length <= this.maxKey;
    const key = keep ? hash('sha256', request, 'base64') : ''; // one-shot: no Hash object per call
    if (keep) {
      const hit = this.map.get(key);
      if (hit) {
        this.counts.reused++;
        return hit;
      }
    }
    this.counts.evaluated++;
    const a = evaluate();
    if (keep) {
      if (this.map.size >= this.maxEntries) this.map.delete(this.map.keys().next().value as string);
      this.map.set(key, Object.freeze({ allow: a.allow, policyIds: Object.freeze([...a.policyIds]) as string[] }));
    }
    return a;
  }

  get size(): number {
    return this.map.size;
  }
}
