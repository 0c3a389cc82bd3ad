// The manifest and the policy in force, re-read when their files change, like the task
// context (product.md section 7a). Guards against a running gate that keeps enforcing rules an
// operator has replaced: a forbid-all written while the gate runs holds from the next call. A
// change that loads is a `reload` entry with the new digests, recorded before any call is
// decided under it; one that does not load refuses every call `fail_closed` until it is mended,
// so a half-written or mistyped policy never means "no policy".
import { fileStamp } from '../util/file-stamp.js';
import { loadManifest, type LoadedManifest } from '../contract/manifest.js';
import { loadPolicyFile } from '../policy/engine.js';
import { TaskBoundPolicy } from '../policy/task-guard.js';
import type { ReloadFields } from '../core/entries.js';
import type { JsonObject } from '../core/json.js';
import type { PolicyService } from './services.js';

export interface Rules {
  manifest: LoadedManifest;
  policy: PolicyService;
}

export interface RulesFiles {
  manifest: string;
  policy: string;
}

/** Loads both files; `task` types the policy's `context.task`. Throws when either does not load. */
export type RulesLoader = (task: JsonObject) => Rules;

export class RulesBroken extends Error {}

export class RulesSource {
  private stamp: string;
  private rules: Rules;
  /** Why the files on disk do not load, while they do not. */
  private broken: string | null = null;
  /** A reload (or a failed one) not yet durable in the ledger. */
  private unrecorded: ReloadFields | null = null;
  /** The task context a failed load was typed by (null: it could not be read). */
  private failedWith: JsonObject | null = null;

  constructor(
    private readonly files: RulesFiles,
    private readonly load: RulesLoader,
    initial: Rules,
    private readonly opts: { log?: (message: string) => void; onLoaded?: (rules: Rules) => void } = {},
  ) {
    this.rules = initial;
    this.stamp = this.stampNow();
  }

  private stampNow(): string {
    return `${fileStamp(this.files.manifest)}|${fileStamp(this.files.policy)}`;
  }

  /** The last rules that loaded: what a refusal names, even while the files are broken. */
  get lastLoaded(): Rules {
    return this.rules;
  }

  /**
   * Before a decision: re-read the files when they changed. Returns the entry that records the
   * change while it is not yet durable (the caller appends it, then calls `recorded`), else null.
   */
  refresh(task: () => JsonObject): ReloadFields | null {
    const stamp = this.stampNow();
    if (stamp === this.stamp && !this.retry(task)) return this.unrecorded;
    this.stamp = stamp;
    this.failedWith = null;
    try {
      const t = task();
      this.failedWith = t;
      this.rules = this.load(t);
      this.broken = null;
      this.unrecorded = { kind: 'reload', outcome: 'loaded', manifest_digest: this.rules.manifest.digest, policy_digest: this.rules.policy.digest };
      this.opts.log?.(`manifest and policy reloaded (manifest ${this.rules.manifest.digest}, policy ${this.rules.policy.digest})`);
      this.opts.onLoaded?.(this.rules);
    } catch (e) {
      // The files' own messages (paths, line and column, Cedar's text) go to the operator's
      // stderr; the entry records only that the change was refused.
      this.broken = 'the manifest or policy file changed and does not load: calls fail closed until it is mended';
      this.unrecorded = { kind: 'reload', outcome: 'failed' };
      this.opts.log?.(`manifest or policy changed and does not load; every call fails closed until it is mended:\n${(e as Error).message}`);
    }
    return this.unrecorded;
  }

  /** Whether files that failed to load must be tried again: the task context they were typed
   *  by changed (ContextSource hands out a new object only then). A policy deployed before the
   *  task context whose shape it reads stayed refused until the policy file was touched again. */
  private retry(task: () => JsonObject): boolean {
    if (this.broken === null) return false;
    try {
      return task() !== this.failedWith;
    } catch {
      return false; // still unreadable: nothing new to type the policy by
    }
  }

  recorded(entry: ReloadFields): void {
    if (this.unrecorded === entry) this.unrecorded = null;
  }

  /** The rules to decide with; throws RulesBroken while the files on disk do not load. */
  current(): Rules {
    if (this.broken !== null) throw new RulesBroken(this.broken);
    return this.rules;
  }
}

/**
 * The loader for files on disk: the manifest, then the policy validated against the schema it
 * generates and typed by `task`. The policy is bound to the task context in force (a reloaded
 * task context is validated against it before use: drift fails closed).
 */
export function fileRules(files: RulesFiles, log: (message: string) => void): RulesLoader {
  return (task) => {
    const manifest = loadManifest(files.manifest);
    const engine = loadPolicyFile(manifest.manifest, files.policy, { task });
    return { manifest, policy: new TaskBoundPolicy(engine, task, { source: files.policy, onDrift: log }) };
  };
}
