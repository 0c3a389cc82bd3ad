// OpenAI Chat Completions: `choices[].message.tool_calls` in a body, `delta.tool_calls`
// fragments (joined by `index`) in a stream, `tool` messages carrying results back. A call's
// fragments are held; every other part of a chunk (role, text) goes out at once. An allowed
// call goes out as the events that carried it when nothing around it changed, else as one
// chunk holding the whole call. The legacy `function_call` is not gated, so it fails closed.
import { isJsonObject, type JsonObject, type JsonValue } from '../../core/json.js';
import type { RefusalData } from '../../core/outcome.js';
import { encodeEvent, type RawSseEvent as SseEvent } from '../../wire/sse-raw.js';
import { HeldCalls, type Slot } from './held.js';
import { readModelJson } from './model-json.js';
import type { ToolResult } from './session.js';
import { absent, appendBounded, CallNames, isIndex, undecidableTool, unattributedOutput, isString, need, refusalLines, type LlmFormat, type StreamContext, type StreamRewriter } from './format.js';

function results(request: JsonValue): ToolResult[] {
  const messages = isJsonObject(request) ? request.messages : undefined;
  if (!Array.isArray(messages)) return [];
  const named = new CallNames();
  for (const m of messages) {
    if (!isJsonObject(m) || m.role !== 'assistant' || !Array.isArray(m.tool_calls)) continue;
    for (const c of m.tool_calls) if (isJsonObject(c) && isJsonObject(c.function)) named.add(c.id, c.function.name);
  }
  const out: ToolResult[] = [];
  for (const m of messages) {
    if (isJsonObject(m) && m.role === 'tool' && isString(m.tool_call_id)) out.push({ id: m.tool_call_id, content: m.content ?? null, isError: false, ...named.of(m.tool_call_id) });
  }
  return out;
}

/** The roles of Chat Completions messages; `tool` messages carry results, read by `results`. */
const ROLES = new Set(['system', 'developer', 'user', 'assistant', 'tool']);

/**
 * A message carrying a tool's output the gate cannot tie to a call: a legacy `function` result
 * (by name, for calls the gate never decides), a `tool` message without an id, a role the gate
 * does not read.
 */
function unattributable(m: JsonValue): string | null {
  if (!isJsonObject(m)) return 'not a message object';
  if (m.role === 'function') return 'a legacy function result: the gate cannot tell which call it settles';
  if (!isString(m.role) || !ROLES.has(m.role)) return 'a message of a role the gate does not read';
  if (m.role === 'tool' && !isString(m.tool_call_id)) return 'a tool result without a tool_call_id';
  return null;
}

/** Chat Completions: the agent runs `function` tools; the gate reads no other kind of call. */
function undecidable(request: JsonObject): string | null {
  // Search models search the web themselves, on the model's own queries.
  if (!absent(request.web_search_options)) return 'web_search_options: the model API would search the web itself, where the gate cannot decide the searches';
  if (!absent(request.functions)) return 'functions: legacy function calls are not gated: use tools';
  const output = unattributedOutput(request.messages, 'messages', unattributable);
  if (output !== null) return output;
  const tool = undecidableTool(request.tools, (t) => t.type === 'function');
  return tool && `${tool}: not of type function: the gate cannot decide its calls`;
}

function choicesOf(body: JsonObject): JsonObject[] {
  const choices = body.choices;
  return need(Array.isArray(choices) && choices.every(isJsonObject), choices as JsonObject[], 'choices must be a list of objects');
}

function noLegacyCall(message: JsonObject): void {
  need(message.function_call === undefined || message.function_call === null, null, 'function_call is not gated: use tools');
}

function bodyCalls(body: JsonObject): Slot<null>[][] {
  return choicesOf(body).map((choice) => {
    const message = need(isJsonObject(choice.message), choice.message as JsonObject, 'a choice needs a message');
    noLegacyCall(message);
    const calls = message.tool_calls;
    if (calls === undefined || calls === null) return [];
    need(Array.isArray(calls), null, 'tool_calls must be a list');
    return (calls as JsonValue[]).map((c, index) => {
      const fn = isJsonObject(c) ? c.function : undefined;
      need(isJsonObject(c) && c.type === 'function' && isString(c.id) && isJsonObject(fn) && isString(fn.name) && isString(fn.arguments), null, 'a tool call needs an id, a type function, a name and arguments');
      const f = fn as JsonObject;
      return { index, id: (c as JsonObject).id as string, tool: f.name as string, args: f.arguments as string, held: null };
    });
  });
}

function rewriteBody(body: JsonObject, groups: HeldCalls<null>[]): JsonObject {
  const choices = choicesOf(body).map((choice, i) => {
    const g = groups[i];
    if (g.refused.length === 0) return choice;
    const message = choice.message as JsonObject;
    const kept = g.slots.filter((s) => s.verdict?.release).map((s) => (message.tool_calls as JsonValue[])[s.index]);
    const { tool_calls: _dropped, ...rest } = message;
    const text = refusalLines(g);
    const content = isString(message.content) && message.content !== '' ? `${message.content}\n${text}` : text;
    const out: JsonObject = { ...choice, message: { ...rest, content, ...(kept.length > 0 ? { tool_calls: kept } : {}) } };
    if (kept.length === 0 && choice.finish_reason === 'tool_calls') out.finish_reason = 'stop';
    return out;
  });
  return { ...body, choices };
}

function errorBody(text: string, refusal: RefusalData): JsonObject {
  return { error: { message: text, type: 'cloakpipe_refused', code: refusal.reason, param: null, cloakpipe: { ...refusal } } };
}

function errorEvent(text: string, refusal: RefusalData): Uint8Array {
  return encodeEvent(JSON.stringify(errorBody(text, refusal)));
}

/** What a streamed call keeps while held: the events it came in, when they held nothing else. */
interface Held {
  raws: Uint8Array[];
  /** Every fragment came in an event of its own: releasing it unchanged writes those events. */
  whole: boolean;
  /** One of its events carried the choice's role: dropping it means the role is owed. */
  role: boolean;
}

interface Choice {
  index: number;
  calls: HeldCalls<Held>;
  byIndex: Map<number, Slot<Held>>;
  roleOwed: boolean;
  textOut: boolean;
  finished: boolean;
}

class OpenAiStream implements StreamRewriter {
  private readonly choices = new Map<number, Choice>();
  private template: JsonObject = {};
  /** Slots whose arguments are complete (a fragment after that is an unreadable stream). */
  private readonly completed = new WeakSet<Slot<Held>>();

  constructor(private readonly ctx: StreamContext) {}

  groups() {
    return [...this.choices.values()].map((c) => c.calls);
  }

  private choice(index: number): Choice {
    let c = this.choices.get(index);
    if (!c) {
      const created: Choice = {
        index,
        byIndex: new Map(),
        roleOwed: false,
        textOut: false,
        finished: false,
        calls: new HeldCalls<Held>(
          (slot) => this.ctx.decide(slot),
          (slot, position) => this.out(created, slot, position),
        ),
      };
      c = created;
      this.choices.set(index, c);
    }
    return c;
  }

  async event(e: SseEvent): Promise<void> {
    if (e.data === undefined) return this.ctx.write(e.raw); // a comment or keep-alive
    if (e.data === '[DONE]') {
      await this.end();
      return this.ctx.write(e.raw);
    }
    const chunk = readModelJson(e.data, 'a stream chunk');
    need(isJsonObject(chunk), null, 'a stream chunk must be an object');
    const c = chunk as JsonObject;
    // A chunk with no choice goes out as it is (an error, usage). One with choices is read
    // whatever else it holds: the SDK raises an `error` only when it is truthy (null, false, 0
    // and '' are read as a chunk), and the AI SDK drops the member and reads the choices.
    if (c.choices === undefined || (Array.isArray(c.choices) && c.choices.length === 0)) return this.ctx.write(e.raw);
    const { choices: _c, usage: _u, ...template } = c;
    this.template = template;
    const choices = choicesOf(c);
    let changed = false;
    let heldWhole = false;
    const finishing: Choice[] = [];
    const outChoices = choices.map((ch) => {
      need(isIndex(ch.index), null, 'a choice needs an index');
      // The SDK merges a streamed choice's other members into its snapshot: a whole message
      // there would be the agent's, calls and all, without a fragment the gate reads.
      need(ch.message === undefined || ch.message === null, null, 'a streamed choice carries a whole message');
      const st = this.choice(ch.index as number);
      const delta = ch.delta === undefined || ch.delta === null ? {} : need(isJsonObject(ch.delta), ch.delta as JsonObject, 'delta must be an object');
      noLegacyCall(delta);
      if (isString(delta.content) && delta.content !== '') st.textOut = true;
      const frags = delta.tool_calls;
      let outChoice = ch;
      if (frags !== undefined && frags !== null) {
        need(Array.isArray(frags) && frags.every(isJsonObject), null, 'tool_calls must be a list of objects');
        const list = frags as JsonObject[];
        // The event may be held as it is when it carries one fragment and nothing the agent must see now.
        const whole = choices.length === 1 && list.length === 1 && !hasMore(ch, delta) && (c.usage === undefined || c.usage === null);
        for (const f of list) this.fragment(st, f, whole ? e.raw : null, whole && isString(delta.role));
        if (whole) heldWhole = true;
        const { tool_calls: _t, ...rest } = delta;
        outChoice = { ...ch, delta: rest };
        changed = true;
      }
      if (ch.finish_reason !== undefined && ch.finish_reason !== null) finishing.push(st);
      return outChoice;
    });
    for (const st of finishing) await this.finish(st);
    if (heldWhole) return;
    if (!changed && !choices.some((ch) => this.stops(ch))) return this.ctx.write(e.raw);
    const out = { ...c, choices: outChoices.map((ch) => (this.stops(ch) ? { ...ch, finish_reason: 'stop' } : ch)) };
    this.ctx.write(encodeEvent(JSON.stringify(out)));
  }

  /**
   * One fragment of a call: a new index completes the calls before it (calls stream one by one).
   * Readers join fragments differently (the official SDK copies any other member into the call,
   * keeps the last name and appends any truthy `arguments`; other frameworks join names), so a
   * fragment is read only when every reader gets the call the gate decides: no member but these,
   * each of its type or null, the type `function` each time, one non-empty name.
   */
  private fragment(st: Choice, f: JsonObject, raw: Uint8Array | null, role: boolean): void {
    need(isIndex(f.index), null, 'a tool call fragment needs an index');
    for (const [k, v] of Object.entries(f)) need(FRAGMENT_MEMBERS.has(k) || v === null, null, 'a tool call fragment has a member the gate does not read');
    need(f.type === undefined || f.type === null || f.type === 'function', null, 'a tool call must be of type function');
    need(optional(f.id, isString), null, 'a tool call id must be a string');
    const fn = f.function === undefined || f.function === null ? {} : need(isJsonObject(f.function), f.function as JsonObject, 'function must be an object');
    need(optional(fn.name, isString) && optional(fn.arguments, isString), null, 'a function name and arguments must be strings');
    let slot = st.byIndex.get(f.index as number);
    if (!slot) {
      need(!st.finished, null, 'a tool call after the choice finished');
      for (const s of st.calls.slots) if (s.verdict === undefined && !this.completed.has(s)) this.complete(st, s);
      slot = { index: f.index as number, id: '', tool: '', args: '', held: { raws: [], whole: true, role: false } };
      st.byIndex.set(slot.index, slot);
      st.calls.slots.push(slot);
    }
    need(!this.completed.has(slot), null, 'a fragment of a call already complete');
    if (isString(f.id) && f.id !== '') slot.id = slot.id === '' ? f.id : need(slot.id === f.id, slot.id, 'a call changed its id');
    if (isString(fn.name) && fn.name !== '') {
      need(slot.tool === '', null, 'a call named in two fragments');
      slot.tool = fn.name;
    }
    if (isString(fn.arguments)) slot.args = appendBounded(slot.args as string, fn.arguments, this.ctx.maxArgumentBytes);
    if (raw) slot.held.raws.push(raw);
    else slot.held.whole = false;
    if (role) slot.held.role = true;
  }

  private complete(st: Choice, slot: Slot<Held>): void {
    this.completed.add(slot);
    need(slot.id !== '' && slot.tool !== '', null, 'a tool call needs an id and a name');
    st.calls.complete(slot);
  }

  private async finish(st: Choice): Promise<void> {
    if (st.finished) return;
    for (const s of st.calls.slots) if (!this.completed.has(s)) this.complete(st, s);
    await st.calls.settled();
    st.finished = true;
    if (st.calls.refused.length === 0 || this.ctx.onRefusal === 'error') return;
    const delta: JsonObject = { ...(st.roleOwed ? { role: 'assistant' } : {}), content: `${st.textOut ? '\n' : ''}${refusalLines(st.calls)}` };
    st.roleOwed = false;
    this.ctx.write(this.chunkOf(st.index, delta));
  }

  /** A choice finishing for its calls when none of them went out: the turn is over instead. */
  private stops(ch: JsonObject): boolean {
    const st = this.choices.get(ch.index as number);
    return !!st && ch.finish_reason === 'tool_calls' && st.calls.released === 0 && st.calls.slots.length > 0;
  }

  private out(st: Choice, slot: Slot<Held>, position: number | null): void {
    if (position === null) {
      if (slot.held.role) st.roleOwed = true;
      const v = slot.verdict;
      if (this.ctx.onRefusal === 'error' && v && !v.release) this.ctx.fail(slot.tool, v.refusal);
      return;
    }
    if (slot.held.whole && position === slot.index) {
      for (const raw of slot.held.raws) this.ctx.write(raw);
      return;
    }
    const delta: JsonObject = {
      ...(slot.held.role || st.roleOwed ? { role: 'assistant' } : {}),
      tool_calls: [{ index: position, id: slot.id, type: 'function', function: { name: slot.tool, arguments: slot.args as string } }],
    };
    st.roleOwed = false;
    this.ctx.write(this.chunkOf(st.index, delta));
  }

  private chunkOf(index: number, delta: JsonObject): Uint8Array {
    return encodeEvent(JSON.stringify({ ...this.template, choices: [{ index, delta, logprobs: null, finish_reason: null }] }));
  }

  async end(): Promise<void> {
    for (const st of this.choices.values()) await this.finish(st);
  }
}

/** The members of a streamed tool call fragment the gate reads (any other must be null). */
const FRAGMENT_MEMBERS = new Set(['index', 'id', 'type', 'function']);

/** Absent, null, or of the type `is` checks. */
const optional = (v: JsonValue | undefined, is: (v: unknown) => boolean) => v === undefined || v === null || is(v);

/** Whether a choice carries more than tool call fragments (text, a finish, log probabilities). */
function hasMore(ch: JsonObject, delta: JsonObject): boolean {
  if (ch.finish_reason !== undefined && ch.finish_reason !== null) return true;
  if (ch.logprobs !== undefined && ch.logprobs !== null) return true;
  for (const [k, v] of Object.entries(ch)) if (k !== 'index' && k !== 'delta' && k !== 'finish_reason' && k !== 'logprobs' && v !== null) return true;
  for (const [k, v] of Object.entries(delta)) if (k !== 'tool_calls' && k !== 'role' && v !== null && v !== '') return true;
  return false;
}

export const openai: LlmFormat = {
  name: 'openai',
  results,
  undecidable,
  bodyCalls,
  rewriteBody,
  errorBody,
  errorEvent,
  stream: (ctx) => new OpenAiStream(ctx),
};
