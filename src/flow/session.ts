// The session label (product.md section 6): what the agent behind this gate may have seen.
// It starts at the task context's `sensitivity` (default the lowest label), rises with each
// tool's `returns` label and each `classify` rule that matches a result, and never falls, so
// data read once cannot be handed to a sink whose ceiling is below it, whatever the model says.
// Ceilings and label order are a snapshot taken when the session starts: fixed for its life.
import type { LoadedManifest } from '../contract/manifest.js';
import type { ToolDecl } from '../contract/manifest-types.js';
import type { TaskContext } from '../contract/context.js';
import type { LinearPattern } from '../contract/pattern.js';
import type { JsonValue } from '../core/json.js';
import { digestBytes, digestJson, type Digest } from '../core/digest.js';
import { FlowError, LabelOrder } from './labels.js';
import { readable } from './readable.js';
import { blobTexts, dataUrlTexts, unescapedText } from './blob-text.js';

export type RaiseCause = 'returns' | 'classify' | 'context' | 'fail_closed';

/** One rise of the session label; the digest names what caused it, never its content. */
export interface LabelRaise {
  from: string;
  to: string;
  cause: RaiseCause;
  digest: Digest;
}

export interface FlowOptions {
  /**
   * Characters of one result that classify rules scan (strings, object keys and numbers, in
   * UTF-16 code units). Beyond it the result counts as matching every rule: a result too large
   * to read is treated as the most sensitive thing a rule could have found (ADR 003).
   */
  scanLimit?: number;
  /** The manifest in force (it may be reloaded while the session runs): its classify rules
   *  hold from the next output, as a reload holds from the next call. Default: the session's. */
  inForce?: () => LoadedManifest;
}

type Rule = { label: string; rank: number; pattern: LinearPattern };

export const DEFAULT_SCAN_LIMIT = 1 << 20;

/** A value too deep for the canonical form (the upstream side is not depth-capped) still rises. */
export const UNDIGESTIBLE: Digest = digestBytes('cloakpipe/flow: output too deep to canonicalize');

function safeDigest(output: JsonValue): Digest {
  try {
    return digestJson(output);
  } catch {
    return UNDIGESTIBLE;
  }
}

export class FlowSession {
  readonly order: LabelOrder;
  private current: string;
  private readonly ceilings: ReadonlyMap<string, string>;
  private readonly returnsOf: ReadonlyMap<string, string>;
  /** The classify rules of `rulesOf`, sorted highest label first, so a scan stops at the first
   *  rule that cannot raise. */
  private rules: readonly Rule[] = [];
  private rulesOf: LoadedManifest | null = null;
  private readonly inForce: () => LoadedManifest;
  private readonly scanLimit: number;

  /** Throws FlowError when the context names a label the manifest does not declare (start-up error). */
  constructor(manifest: LoadedManifest, context: TaskContext, opts: FlowOptions = {}) {
    this.order = LabelOrder.of(manifest);
    const ceilings = new Map<string, string>();
    const returnsOf = new Map<string, string>();
    for (const [name, tool] of Object.entries(manifest.manifest.tools)) {
      ceilings.set(name, this.declared(tool.accepts) ?? this.order.lowest);
      const r = this.declared(tool.returns);
      if (r !== undefined) returnsOf.set(name, r);
    }
    this.ceilings = ceilings;
    this.returnsOf = returnsOf;
    this.inForce = opts.inForce ?? (() => manifest);
    this.classifyRules();
    this.scanLimit = opts.scanLimit ?? DEFAULT_SCAN_LIMIT;
    if (!(this.scanLimit >= 0)) throw new FlowError('scan limit must be a non-negative number');
    this.current = this.contextLabel(context) ?? this.order.lowest;
  }

  private declared(label: string | undefined): string | undefined {
    if (label === undefined) return undefined;
    if (!this.order.has(label)) throw new FlowError('the manifest names an undeclared label');
    return label;
  }

  /** The context's sensitivity, or null when it names none; an undeclared label throws. */
  contextLabel(context: TaskContext): string | null {
    const s = context.sensitivity;
    if (s === null) return null;
    if (!this.order.has(s)) throw new FlowError('the task context names a sensitivity the manifest does not declare');
    return s;
  }

  get label(): string {
    return this.current;
  }

  /** The sink ceiling of a tool: its `accepts`, else the lowest label (ADR 003). */
  ceilingOf(toolName: string): string {
    return this.ceilings.get(toolName) ?? this.order.lowest;
  }

  /** The label a decision must use now: the session's, or the context's if that is higher (pure). */
  effectiveLabel(context: TaskContext): string {
    const c = this.contextLabel(context);
    return c === null ? this.current : this.order.max(this.current, c);
  }

  /** The task context was (re-)read: follow its sensitivity up, never down. */
  observeContext(context: TaskContext): LabelRaise | null {
    const c = this.contextLabel(context);
    if (c === null || !this.order.above(c, this.current)) return null;
    return this.raiseTo(c, 'context', context.digest);
  }

  /**
   * The agent is about to see `output` from `toolName` (a result, or an error the tool sent).
   * Raise to the tool's `returns` label and to the highest classify label that matches.
   */
  observe(toolName: string, tool: ToolDecl | undefined, output: JsonValue): LabelRaise | null {
    let target = this.current;
    let cause: RaiseCause = 'returns';
    // A manifest reloaded under this session may name a label its order does not hold (ADR 019):
    // the highest the session knows, never no rise (nor a throw after the reply has gone out).
    const returns = tool?.returns === undefined ? undefined : this.order.has(tool.returns) ? tool.returns : this.order.highest;
    for (const r of [this.returnsOf.get(toolName), returns]) {
      if (r !== undefined && this.order.above(r, target)) target = r;
    }
    const found = this.classify(output, this.order.rankOf(target));
    if (found !== null && this.order.above(found, target)) {
      target = found;
      cause = 'classify';
    }
    if (!this.order.above(target, this.current)) return null;
    const from = this.current;
    this.current = target; // first: the rise must not depend on the digest succeeding
    return { from, to: target, cause, digest: safeDigest(output) };
  }

  /**
   * Server output that is not the result of a gated call (a resources/read or prompts/get
   * result, a notification, a server request, a line that does not parse): no tool's `returns`
   * applies, the classify rules do.
   */
  observeUnattributed(output: JsonValue): LabelRaise | null {
    const found = this.classify(output, this.order.rankOf(this.current));
    if (found === null || !this.order.above(found, this.current)) return null;
    const from = this.current;
    this.current = found;
    return { from, to: found, cause: 'classify', digest: safeDigest(output) };
  }

  /**
   * Output whose content the gate cannot read (handed to the model by reference, ADR 103): as
   * though it matched every classify rule, as output too large to scan does (ADR 003).
   */
  observeUnread(output: JsonValue): LabelRaise | null {
    const worst = this.classifyRules()[0]; // highest first
    if (worst === undefined || !this.order.above(worst.label, this.current)) return null;
    return this.raiseTo(worst.label, 'classify', safeDigest(output));
  }

  /**
   * Labelling `output` failed after the host may have seen it: what it held is unknown, so the
   * session takes its highest label, as for the most sensitive data there is (fail closed).
   */
  failClosed(output: JsonValue): LabelRaise | null {
    const top = this.order.highest;
    return this.current === top ? null : this.raiseTo(top, 'fail_closed', safeDigest(output));
  }

  private raiseTo(to: string, cause: RaiseCause, digest: Digest): LabelRaise {
    const from = this.current;
    this.current = to;
    return { from, to, cause, digest };
  }

  /** The classify rules of the manifest in force; a label this session's order does not hold
   *  (added by a reload) counts as its highest. */
  private classifyRules(): readonly Rule[] {
    const m = this.inForce();
    if (m !== this.rulesOf) {
      this.rules = m.classify
        .map((c) => (this.order.has(c.label) ? c.label : this.order.highest))
        .map((label, i) => ({ label, rank: this.order.rankOf(label), pattern: m.classify[i].pattern }))
        .sort((a, b) => b.rank - a.rank);
      this.rulesOf = m;
    }
    return this.rules;
  }

  /**
   * The highest classify label above `floorRank` that matches any string in `value`, or null.
   * Walks iteratively (no recursion depth to exhaust) and stops once nothing higher is possible.
   */
  classify(value: JsonValue, floorRank: number): string | null {
    let candidates = this.classifyRules().filter((r) => r.rank > floorRank);
    if (candidates.length === 0) return null;
    let best: string | null = null;
    let budget = this.scanLimit;
    const stack: JsonValue[] = [value];
    const scan = (s: string): boolean => {
      // a text file inline as a data: URL: read as the model API decodes it; else a URL's
      // %-escapes as a reader reads them (a card number in a query string, its spaces %20)
      const texts = dataUrlTexts(s);
      for (const text of texts) if (!scan(text)) return false;
      const unescaped = texts.length === 0 ? unescapedText(s) : null;
      if (unescaped !== null && !scan(unescaped)) return false;
      budget -= s.length;
      // Also read as a model reads it (readable.ts); its length counts too: NFKC can expand.
      const alt = readable(s);
      if (alt !== null) budget -= alt.length;
      if (budget < 0) return false;
      for (const r of candidates) {
        if (r.pattern.find(s) || (alt !== null && r.pattern.find(alt))) {
          best = r.label;
          candidates = candidates.filter((c) => c.rank > r.rank);
          break; // rules are sorted highest first: nothing else in this string can beat it
        }
      }
      return true;
    };
    while (stack.length > 0 && candidates.length > 0) {
      const v = stack.pop()!;
      let ok = true;
      if (typeof v === 'string') ok = scan(v);
      else if (typeof v === 'number') ok = scan(String(v));
      else if (Array.isArray(v)) for (let i = v.length - 1; i >= 0; i--) stack.push(v[i]);
      else if (v !== null && typeof v === 'object') {
        // a text resource sent as base64: read as the host decodes it
        for (const text of blobTexts(v)) if (!(ok = scan(text))) break;
        if (ok)
          for (const [k, x] of Object.entries(v)) {
            if (!(ok = scan(k))) break;
            stack.push(x);
          }
      }
      if (!ok) return candidates[0].label; // over the limit: assume the worst a rule could find
    }
    return best;
  }
}
