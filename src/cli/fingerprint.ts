// cloakpipe fingerprint --call FILE [--context FILE]: the fingerprint a gate computes for a call
// (product.md section 5), so a person or a script can name the exact call to approve.
import { readFileSync } from 'node:fs';
import { parseFlags, required, UsageError } from './args.js';
import { parseStrict } from '../wire/strict-parse.js';
import { isJsonObject, type JsonObject } from '../core/json.js';
import { readContextFile, NO_CONTEXT, type TaskContext } from '../contract/context.js';
import { fingerprintOf } from '../core/call.js';
import type { Digest } from '../core/digest.js';

const HELP = `usage: cloakpipe fingerprint --call FILE [--context FILE] [--json]

Print the fingerprint of a tool call: sha256 of the RFC 8785 form of
{"v":1,"tool":...,"arguments":...,"task":<task.id or null>}.

  --call FILE      {"tool": "<name>", "arguments": {...}} (strict JSON)
  --context FILE   the task context; its task.id binds the call to the task
  --json           print {"fingerprint","tool","task"}
`;

export interface CallFile {
  tool: string;
  arguments: JsonObject;
}

const MAX_CALL_FILE = 4 * 1024 * 1024;

/** A call file: strict JSON, exactly `tool` and `arguments`. Throws UsageError (exit 2). */
export function readCallFile(path: string): CallFile {
  let text: string;
  try {
    const buf = readFileSync(path);
    if (buf.length > MAX_CALL_FILE) throw new UsageError(`call file ${path} is larger than 4 MiB`);
    text = new TextDecoder('utf-8', { fatal: true }).decode(buf);
  } catch (e) {
    if (e instanceof UsageError) throw e;
    throw new UsageError(`cannot read call file ${path}: ${(e as NodeJS.ErrnoException).code ?? 'not UTF-8'}`);
  }
  let v;
  try {
    v = parseStrict(text.trim());
  } catch (e) {
    throw new UsageError(`call file ${path} is not strict JSON: ${(e as Error).message}`);
  }
  if (!isJsonObject(v)) throw new UsageError(`call file ${path}: must be an object {"tool", "arguments"}`);
  for (const k of Object.keys(v))
    if (k !== 'tool' && k !== 'arguments') throw new UsageError(`call file ${path}: unknown field (only "tool" and "arguments")`);
  if (typeof v.tool !== 'string' || v.tool === '') throw new UsageError(`call file ${path}: "tool" must be a non-empty string`);
  const args = v.arguments ?? {};
  if (!isJsonObject(args)) throw new UsageError(`call file ${path}: "arguments" must be an object`);
  return { tool: v.tool, arguments: args };
}

export function readContextFlag(path: string | undefined): TaskContext {
  if (!path) return NO_CONTEXT;
  try {
    return readContextFile(path);
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
}

export function callFingerprint(call: CallFile, ctx: TaskContext): Digest {
  return fingerprintOf(call.tool, call.arguments, ctx.taskId);
}

export async function run(argv: string[]): Promise<number> {
  const { values } = parseFlags(argv, { call: { type: 'string' }, context: { type: 'string' }, json: { type: 'boolean' } });
  if (values.help) {
    process.stdout.write(HELP);
    return 0;
  }
  const call = readCallFile(required(values.call as string | undefined, '--call'));
  const ctx = readContextFlag(values.context as string | undefined);
  const fp = callFingerprint(call, ctx);
  if (values.json) process.stdout.write(JSON.stringify({ fingerprint: fp, tool: call.tool, task: ctx.taskId }) + '\n');
  else process.stdout.write(fp + '\n');
  return 0;
}
