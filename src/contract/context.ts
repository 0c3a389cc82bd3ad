// The task context: written by the orchestrator from its system of record, never from the
// conversation. Re-read when the file changes; every decision records the digest it used.
import { readRegularFile } from '../util/regular-file.js';
import { fileStamp } from '../util/file-stamp.js';
import type { JsonObject, JsonValue } from '../core/json.js';
import { isJsonObject } from '../core/json.js';
import { parseStrict, WireError } from '../wire/strict-parse.js';
import { jsonErrorPosition } from '../wire/position.js';
import { digestJson, type Digest } from '../core/digest.js';

export class ContextError extends Error {}

export interface TaskContext {
  doc: JsonObject;
  task: JsonObject;
  taskId: string | null;
  sensitivity: string | null;
  digest: Digest;
}

const EMPTY: JsonObject = {};
export const NO_CONTEXT: TaskContext = { doc: EMPTY, task: EMPTY, taskId: null, sensitivity: null, digest: digestJson(EMPTY) };

export function buildContext(doc: JsonValue): TaskContext {
  if (!isJsonObject(doc)) throw new ContextError('task context must be a JSON object');
  const task = doc.task ?? {};
  if (!isJsonObject(task)) throw new ContextError('task context: "task" must be an object');
  const id = task.id;
  if (id !== undefined && typeof id !== 'string') throw new ContextError('task context: task.id must be a string');
  const s = doc.sensitivity;
  if (s !== undefined && typeof s !== 'string') throw new ContextError('task context: sensitivity must be a string');
  return { doc, task, taskId: id ?? null, sensitivity: s ?? null, digest: digestJson(doc) };
}

export function readContextFile(path: string): TaskContext {
  let text: string;
  try {
    text = readRegularFile(path).toString('utf8');
  } catch (e) {
    throw new ContextError(`cannot read task context ${path}: ${(e as NodeJS.ErrnoException).code ?? 'error'}`);
  }
  const trimmed = text.trim();
  try {
    return buildContext(parseStrict(trimmed));
  } catch (e) {
    if (e instanceof ContextError) throw e;
    if (!(e instanceof WireError)) throw new ContextError(`task context ${path} is not strict JSON`);
    // Positions count in the file as written, before the trim.
    const lead = text.length - text.trimStart().length;
    if (e.at !== undefined) e.at += lead;
    throw new ContextError(`task context ${path} is not strict JSON: ${jsonErrorPosition(text, e)}`);
  }
}

/** Resolve a dotted path (`task.customer.emails`) in the context document. */
export function contextPath(ctx: TaskContext, path: string): JsonValue | undefined {
  let cur: JsonValue | undefined = ctx.doc;
  for (const part of path.split('.')) {
    if (!isJsonObject(cur) || !Object.prototype.hasOwnProperty.call(cur, part)) return undefined;
    cur = cur[part];
  }
  return cur;
}

/** A context file watched by stat (once a turn, ADR 032): a change of inode, size, mtime or ctime triggers a re-read. */
export class ContextSource {
  private stamp = '';
  private current: TaskContext;

  constructor(private readonly path: string | undefined) {
    if (path) this.stamp = fileStamp(path);
    this.current = path ? readContextFile(path) : NO_CONTEXT;
  }

  /** The context in force now; throws (→ fail_closed) when the file became unreadable or invalid. */
  get(): TaskContext {
    if (!this.path) return this.current;
    const stamp = fileStamp(this.path);
    if (stamp.startsWith('unreadable:')) throw new ContextError(`cannot read task context ${this.path}: ${stamp.slice('unreadable:'.length)}`);
    if (stamp !== this.stamp) {
      this.current = readContextFile(this.path);
      this.stamp = stamp;
    }
    return this.current;
  }
}
