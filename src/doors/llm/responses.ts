// OpenAI Responses: `output[]` items in a body (`function_call` items are the calls); in a
// stream, typed events, each item added, filled and done in turn under its `output_index`,
// every event numbered by `sequence_number`; `function_call_output` input items carrying
// results back. The SDK keeps its items by `output_index`, so a refused call is replaced where
// it stood by a message item naming the refusal, and nothing after it moves. A call's events are
// held until it is decided; what follows a held call waits behind it, so the agent reads the
// items in the model's order. The same call reaches a reader three ways (the argument deltas,
// `function_call_arguments.done`, `output_item.done`) and once more in the final response,
// which the SDK takes whole: each must be the call the gate decided, or the stream fails closed.
import { isJsonObject, type JsonObject, type JsonValue } from '../../core/json.js';
import type { RefusalData } from '../../core/outcome.js';
import { encodeEvent, type RawSseEvent as SseEvent } from '../../wire/sse-raw.js';
import { HeldCalls, refusalText, type Slot } from './held.js';
import { readModelJson } from './model-json.js';
import { openai } from './openai.js';
import type { ToolResult } from './session.js';
import { absent, appendBounded, CallNames, isIndex, isString, need, undecidableTool, unattributedOutput, type LlmFormat, type StreamContext, type StreamRewriter } from './format.js';

function results(request: JsonValue): ToolResult[] {
  const input = isJsonObject(request) ? request.input : undefined;
  if (!Array.isArray(input)) return [];
  const named = new CallNames();
  for (const item of input) if (isJsonObject(item) && item.type === 'function_call') named.add(item.call_id, item.name);
  const out: ToolResult[] = [];
  for (const item of input) {
    if (isJsonObject(item) && item.type === 'function_call_output' && isString(item.call_id)) out.push({ id: item.call_id, content: item.output ?? null, isError: false, ...named.of(item.call_id) });
  }
  return out;
}

/**
 * The agent runs `function` tools; every other kind the API runs itself (web and file search,
 * code interpreter, remote MCP, image generation, computer use) or sends as free text the gate
 * cannot read as arguments (`custom`, `local_shell`, `apply_patch`). A stored prompt can bring
 * tools of its own, and a background response is fetched later, past the gate. What the API
 * stores (an earlier response, a conversation, an item by id, a compacted context) reaches the
 * model without passing the gate, tool output and all: the label could not follow it (ADR 096).
 */
function undecidable(request: JsonObject): string | null {
  if (!absent(request.prompt)) return 'prompt: a stored prompt can bring tools the gate does not see';
  for (const member of STORED_CONTEXT) {
    if (!absent(request[member])) return `${member}: the model would read context the API stores, which the gate cannot see: send the whole input`;
  }
  const output = unattributedOutput(request.input, 'input', unattributable);
  if (output !== null) return output;
  if (request.background !== undefined && request.background !== null && request.background !== false) return 'background: the response would be fetched later, past the gate';
  const tool = undecidableTool(request.tools, (t) => t.type === 'function');
  return tool && `${tool}: not of type function: the model API runs it itself, or its calls are not arguments the gate can decide`;
}

/** Request members that make the model read what the API stores instead of what the request holds. */
const STORED_CONTEXT = ['previous_response_id', 'conversation'];

/** Input items that carry no tool output: messages and the agent's record of the model's own items. */
const QUIET_INPUT = new Set(['message', 'function_call', 'reasoning']);
/** Input items that stand for content the API stores: an item by its id, a compacted context (encrypted). */
const STORED_INPUT = new Set(['item_reference', 'compaction']);
const MESSAGE_ROLES = new Set(['user', 'assistant', 'system', 'developer']);

/**
 * An input item carrying a tool's output the gate cannot tie to a call it released: the output
 * of any other kind of tool (custom, computer, local shell, shell, apply_patch, MCP, tool
 * search, the API's own tools), whose calls the gate never decides, a result without a call
 * id, an item of a type the gate does not read. `function_call_output` is read by `results`.
 */
function unattributable(item: JsonValue): string | null {
  if (!isJsonObject(item)) return 'not an item object';
  if (item.type === undefined || item.type === null) return isString(item.role) && MESSAGE_ROLES.has(item.role) ? null : 'a message of a role the gate does not read';
  if (item.type === 'function_call_output') return isString(item.call_id) ? null : 'a function call output without a call_id';
  if (item.type === 'message') return isString(item.role) && MESSAGE_ROLES.has(item.role) ? null : 'a message of a role the gate does not read';
  if (isString(item.type) && QUIET_INPUT.has(item.type)) return null;
  if (isString(item.type) && STORED_INPUT.has(item.type)) return `${item.type}: content the API stores, which the gate cannot see: send the whole input`;
  return 'an item that may carry the output of a call the gate never decided: the gate cannot attribute it';
}

/** Items the agent reads as text (passed on) or as a call (decided); any other fails closed. */
const ITEM_TYPES = new Set(['message', 'reasoning', 'function_call']);

function knownItem(item: JsonValue | undefined): JsonObject {
  need(isJsonObject(item) && isString(item.type) && ITEM_TYPES.has(item.type), null, 'an output item of a type the gate does not read (a tool the model API ran?)');
  return item as JsonObject;
}

function outputOf(response: JsonObject): JsonObject[] {
  const output = response.output;
  need(Array.isArray(output), null, 'output must be a list of items');
  return (output as JsonValue[]).map(knownItem);
}

/** A function_call item as a call to decide: its call_id (what the result comes back under), name and arguments. */
function callOf(item: JsonObject, index: number): Slot<null> {
  need(isString(item.call_id) && item.call_id !== '' && isString(item.name) && item.name !== '' && isString(item.arguments), null, 'a function call needs a call_id, a name and arguments');
  return { index, id: item.call_id as string, tool: item.name as string, args: item.arguments as string, held: null };
}

function bodyCalls(body: JsonObject): Slot<null>[][] {
  return [outputOf(body).flatMap((item, i) => (item.type === 'function_call' ? [callOf(item, i)] : []))];
}

/** The message item standing where a refused call stood. */
function refusalItem(index: number, text: string, status: 'in_progress' | 'completed'): JsonObject {
  return { id: `msg_cloakpipe_${index}`, type: 'message', status, content: status === 'completed' ? [textPart(text)] : [], role: 'assistant' };
}

const textPart = (text: string): JsonObject => ({ type: 'output_text', annotations: [], logprobs: [], text });

const hasText = (item: JsonValue): boolean =>
  isJsonObject(item) && item.type === 'message' && Array.isArray(item.content) && item.content.some((p) => isJsonObject(p) && p.type === 'output_text' && isString(p.text) && p.text !== '');

/** `output` with each refused call replaced by its refusal, on a line of its own after text. */
function replaceRefused(output: JsonValue[], refused: Map<number, RefusalData & { tool: string }>): JsonValue[] {
  let texted = false;
  return output.map((item, i) => {
    const r = refused.get(i);
    const out = r ? refusalItem(i, `${texted ? '\n' : ''}${refusalText(r.tool, r)}`, 'completed') : item;
    if (hasText(out)) texted = true;
    return out;
  });
}

function refusedOf<H>(g: HeldCalls<H>): Map<number, RefusalData & { tool: string }> {
  const out = new Map<number, RefusalData & { tool: string }>();
  for (const s of g.slots) if (s.verdict && !s.verdict.release) out.set(s.index, { ...s.verdict.refusal, tool: s.tool });
  return out;
}

function rewriteBody(body: JsonObject, [g]: HeldCalls<null>[]): JsonObject {
  if (g.refused.length === 0) return body;
  return { ...body, output: replaceRefused(outputOf(body), refusedOf(g)) };
}

// Errors are OpenAI's, as in Chat Completions: the SDK raises an event whose data holds `error`.
const errorBody = openai.errorBody;

function errorEvent(text: string, refusal: RefusalData): Uint8Array {
  return encodeEvent(JSON.stringify(errorBody(text, refusal)), 'error');
}

// ── streams ─────────────────────────────────────────────────────────────────────────────────

interface Held {
  itemId: JsonValue | undefined;
  events: { e: SseEvent; data: JsonObject }[];
  /** `function_call_arguments.done` said these arguments. */
  said?: string;
  done: boolean;
  out: boolean;
}

/** What waits to go out behind a call not decided yet, in order. */
type Part = { e: SseEvent; data: JsonObject | null; changed: boolean } | { slot: Slot<Held> };

/** Events that replace the whole response in the SDK's snapshot. */
const OPENING = new Set(['response.created', 'response.queued', 'response.in_progress']);
const FINAL = new Set(['response.completed', 'response.incomplete', 'response.failed']);
/** The events a function call item may have after it was added. */
const CALL_EVENTS = new Set(['response.function_call_arguments.delta', 'response.function_call_arguments.done', 'response.output_item.done']);

class ResponsesStream implements StreamRewriter {
  private readonly calls: HeldCalls<Held>;
  /** Each output item by its output_index: a call held, or the type of an item passed on. */
  private readonly items: (Slot<Held> | string)[] = [];
  private readonly queue: Part[] = [];
  /** The sequence number the next event out carries (events the gate adds or drops shift the rest). */
  private seq: number | null = null;
  private texted = false;
  private finished = false;

  constructor(private readonly ctx: StreamContext) {
    this.calls = new HeldCalls<Held>(
      (slot) => this.ctx.decide(slot),
      (slot) => {
        slot.held.out = true;
        this.flush();
      },
    );
  }

  groups() {
    return [this.calls];
  }

  async event(e: SseEvent): Promise<void> {
    if (e.data === undefined) return this.pass(e, null); // a comment or keep-alive
    need(!this.finished, null, 'an event after the response ended');
    const v = readModelJson(e.data, 'a stream event');
    need(isJsonObject(v) && isString(v.type), null, 'a stream event needs a type');
    const data = v as JsonObject;
    const type = data.type as string;
    if (OPENING.has(type)) {
      // The SDK starts its snapshot again from this response: it must hold no item yet.
      need(isJsonObject(data.response) && Array.isArray((data.response as JsonObject).output) && ((data.response as JsonObject).output as JsonValue[]).length === 0 && this.items.length === 0, null, 'a response event carries output items');
      return this.pass(e, data);
    }
    if (FINAL.has(type)) return this.final(e, data);
    // Keepalive, error. An item added or done names its place: the SDK appends an added item
    // wherever its output_index is, absent too, so one without it would be a call held unseen.
    if (data.output_index === undefined && !type.startsWith('response.output_item.')) return this.pass(e, data);
    need(isIndex(data.output_index), null, 'an output_index must be an index');
    const index = data.output_index as number;
    if (type === 'response.output_item.added') return this.added(e, data, index);
    need(index < this.items.length, null, 'an event for an output item not added');
    const at = this.items[index];
    if (typeof at === 'string') {
      // What a passed item may become: the SDK keeps output_item.done's item as the item.
      if (type === 'response.output_item.done') need(knownItem(data.item).type === at, null, 'an output item changed its type');
      return this.pass(e, data);
    }
    this.callEvent(at, e, data, type);
  }

  private added(e: SseEvent, data: JsonObject, index: number): void {
    need(index === this.items.length, null, 'output items must be added in order');
    const item = knownItem(data.item);
    if (item.type !== 'function_call') {
      this.items.push(item.type as string);
      return this.pass(e, data);
    }
    const { id, tool, args } = callOf(item, index);
    const slot: Slot<Held> = { index, id, tool, args, held: { itemId: item.id, events: [{ e, data }], done: false, out: false } };
    this.items.push(slot);
    this.calls.slots.push(slot);
    this.queue.push({ slot });
  }

  private callEvent(slot: Slot<Held>, e: SseEvent, data: JsonObject, type: string): void {
    const h = slot.held;
    need(CALL_EVENTS.has(type) && !h.done, null, 'an event the gate does not read for a function call');
    if (type !== 'response.output_item.done') need(data.item_id === undefined || data.item_id === h.itemId, null, 'a function call event for another item');
    if (type === 'response.function_call_arguments.delta') {
      need(isString(data.delta) && h.said === undefined, null, 'an argument delta must be text, before the arguments are done');
      slot.args = appendBounded(slot.args as string, data.delta as string, this.ctx.maxArgumentBytes);
    } else if (type === 'response.function_call_arguments.done') {
      need(isString(data.arguments) && data.arguments === slot.args, null, 'the arguments done are not the arguments streamed');
      h.said = data.arguments as string;
    } else {
      const item = knownItem(data.item);
      need(item.type === 'function_call' && item.call_id === slot.id && item.name === slot.tool && item.arguments === slot.args, null, 'a function call done is not the call streamed');
      h.done = true;
    }
    h.events.push({ e, data });
    if (h.done) this.calls.complete(slot);
  }

  /** The response is over: every call decided and out, then the response, with each refused call replaced. */
  private async final(e: SseEvent, data: JsonObject): Promise<void> {
    need(isJsonObject(data.response), null, 'a final event needs its response');
    const response = data.response as JsonObject;
    const output = outputOf(response);
    need(output.length === this.items.length, null, 'the final response has other items than the stream');
    output.forEach((item, i) => {
      const at = this.items[i];
      if (typeof at === 'string') return need(item.type === at, null, 'the final response has other items than the stream');
      need(at.held.done && item.type === 'function_call' && item.call_id === at.id && item.name === at.tool && item.arguments === at.args, null, 'the final response has another call than the stream');
    });
    this.finished = true;
    await this.calls.settled();
    const refused = refusedOf(this.calls);
    if (refused.size === 0 || this.ctx.onRefusal === 'error') return this.pass(e, data);
    this.pass(e, { ...data, response: { ...response, output: replaceRefused(output, refused) } }, true);
  }

  async end(): Promise<void> {
    // A stream that ended without its final event: each call is decided on what it holds, as
    // it would reach the agent (arguments cut short are refused as unreadable).
    for (const s of this.calls.slots) if (!s.held.done) ((s.held.done = true), this.calls.complete(s));
    await this.calls.settled();
  }

  private pass(e: SseEvent, data: JsonObject | null, changed = false): void {
    if (this.queue.length > 0) this.queue.push({ e, data, changed });
    else this.emit(e, data, changed);
  }

  private flush(): void {
    while (this.queue.length > 0) {
      const p = this.queue[0];
      if ('slot' in p) {
        if (!p.slot.held.out) return;
        this.queue.shift();
        this.release(p.slot);
        continue;
      }
      this.queue.shift();
      this.emit(p.e, p.data, p.changed);
    }
  }

  private release(slot: Slot<Held>): void {
    const v = slot.verdict!;
    if (v.release) {
      for (const { e, data } of slot.held.events) this.emit(e, data);
      return;
    }
    if (this.ctx.onRefusal === 'error') return this.ctx.fail(slot.tool, v.refusal);
    const index = slot.index;
    const id = `msg_cloakpipe_${index}`;
    const text = `${this.texted ? '\n' : ''}${refusalText(slot.tool, v.refusal)}`;
    const at = { item_id: id, output_index: index, content_index: 0 };
    const events: JsonObject[] = [
      { type: 'response.output_item.added', output_index: index, item: refusalItem(index, text, 'in_progress') },
      { type: 'response.content_part.added', ...at, part: textPart('') },
      { type: 'response.output_text.delta', ...at, delta: text, logprobs: [] },
      { type: 'response.output_text.done', ...at, text, logprobs: [] },
      { type: 'response.content_part.done', ...at, part: textPart(text) },
      { type: 'response.output_item.done', output_index: index, item: refusalItem(index, text, 'completed') },
    ];
    for (const data of events) this.emit({ raw: new Uint8Array(), type: data.type as string }, data, true);
  }

  /** Write one event: its own bytes when nothing in it changed, else re-encoded, numbered in turn. */
  private emit(e: SseEvent, data: JsonObject | null, changed = false): void {
    if (data && data.type === 'response.output_text.delta' && isString(data.delta) && data.delta !== '') this.texted = true;
    if (!data || (data.sequence_number === undefined && !changed)) return this.ctx.write(e.raw);
    if (this.seq === null && isIndex(data.sequence_number)) this.seq = data.sequence_number as number;
    const seq = this.seq === null ? undefined : this.seq++;
    if (!changed && data.sequence_number === seq) return this.ctx.write(e.raw);
    this.ctx.write(encodeEvent(JSON.stringify(seq === undefined ? data : { ...data, sequence_number: seq }), e.type ?? (data.type as string)));
  }
}

export const responses: LlmFormat = {
  name: 'responses',
  results,
  undecidable,
  bodyCalls,
  rewriteBody,
  errorBody,
  errorEvent,
  stream: (ctx) => new ResponsesStream(ctx),
};
