// Sensitivity labels as an ordered set (product.md section 6). A snapshot of the manifest's
// order, taken once, so a label's rank and a tool's ceiling cannot change under a live session.
import type { LoadedManifest } from '../contract/manifest.js';

export class FlowError extends Error {}

export class LabelOrder {
  private readonly rank: ReadonlyMap<string, number>;
  readonly labels: readonly string[];

  constructor(labels: readonly string[]) {
    if (labels.length === 0) throw new FlowError('no sensitivity labels');
    this.labels = Object.freeze([...labels]);
    this.rank = new Map(this.labels.map((l, i) => [l, i]));
    if (this.rank.size !== this.labels.length) throw new FlowError('duplicate sensitivity label');
  }

  static of(m: LoadedManifest): LabelOrder {
    return new LabelOrder(m.manifest.labels);
  }

  get lowest(): string {
    return this.labels[0];
  }

  get highest(): string {
    return this.labels[this.labels.length - 1];
  }

  has(label: unknown): label is string {
    return typeof label === 'string' && this.rank.has(label);
  }

  /** Rank of a declared label (0 = lowest); an unknown label is an error, never a guess. */
  rankOf(label: string): number {
    const r = this.rank.get(label);
    if (r === undefined) throw new FlowError('unknown sensitivity label');
    return r;
  }

  /** a is strictly above b. */
  above(a: string, b: string): boolean {
    return this.rankOf(a) > this.rankOf(b);
  }

  max(a: string, b: string): string {
    return this.above(b, a) ? b : a;
  }
}
