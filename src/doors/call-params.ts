// The shape of a tools/call's params, checked before the gate sees the call. Guards against a
// server acting on members the gate never looked at: only name, arguments, _meta and task (a
// task-augmented call, MCP 2025-11-25: gated like any other, the task object forwarded) pass, and the gate's own _meta keys (`cloakpipe/…`: receipts, operation
// ids) are stripped before forwarding.
import { isJsonObject, type JsonObject, type JsonValue } from '../core/json.js';
import type { Call } from '../core/call.js';

export type CallParams =
  | { ok: true; call: Omit<Call, 'taskId'>; forwarded: JsonObject }
  | { ok: false; detail: string };

const GATE_META = 'cloakpipe/';
const MEMBERS = new Set(['name', 'arguments', '_meta', 'task']);

export function readCallParams(params: JsonValue | undefined): CallParams {
  if (!isJsonObject(params ?? null) || typeof (params as JsonObject).name !== 'string') {
    return { ok: false, detail: 'tools/call params must name a tool' };
  }
  const p = params as JsonObject;
  const extra = Object.keys(p).filter((k) => !MEMBERS.has(k));
  // Only an absent member is "none given": the SDK's server refuses a null arguments, drops a
  // call whose _meta is null, and a null task forwarded as {} would be a call sent with a task.
  const args = p.arguments === undefined ? {} : p.arguments;
  const meta = p._meta === undefined ? {} : p._meta;
  const task = p.task === undefined ? {} : p.task;
  if (extra.length > 0 || !isJsonObject(args) || !isJsonObject(meta) || !isJsonObject(task)) {
    return { ok: false, detail: 'tools/call params hold only name, and arguments, _meta and task objects' };
  }
  const forwardedMeta: JsonObject = {};
  for (const [k, v] of Object.entries(meta)) if (!k.startsWith(GATE_META)) forwardedMeta[k] = v;
  const forwarded: JsonObject = { name: p.name, arguments: args };
  if (Object.keys(forwardedMeta).length > 0) forwarded._meta = forwardedMeta;
  if (p.task !== undefined) forwarded.task = task;
  return { ok: true, call: { tool: p.name as string, arguments: args, meta }, forwarded };
}
