// Anthropic Messages: `tool_use` content blocks in a body; in a stream, a block's start, its
// `input_json_delta` pieces and its stop, held together; `tool_result` blocks carrying results
// back. Content blocks are numbered by position and the SDK reads them by that number, so a
// block goes out under the next free number: the one the model gave it when nothing before it
// was held back or dropped (its events then go out byte for byte), a new one otherwise.
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
    if (!isJsonObject(m) || !Array.isArray(m.content)) continue;
    for (const b of m.content) if (isJsonObject(b) && b.type === 'tool_use') named.add(b.id, b.name);
  }
  const out: ToolResult[] = [];
  // Wherever a tool_result stands: the API reads user messages' only, a reader may read others'.
  for (const m of messages) {
    if (!isJsonObject(m) || !Array.isArray(m.content)) continue;
    for (const b of m.content) {
      if (isJsonObject(b) && b.type === 'tool_result' && isString(b.tool_use_id)) out.push({ id: b.tool_use_id, content: b.content ?? null, isError: b.is_error === true, ...named.of(b.tool_use_id) });
    }
  }
  return out;
}

/**
 * Tools whose calls come back to the agent as tool_use blocks for the gate to decide: the
 * agent's own (no type, `custom`) and those Anthropic defines for the agent to run. The API runs
 * every other kind itself (web search and fetch, code execution, tool search, advisor), its
 * calls done before the gate sees them; toolsets come back as blocks with a `toolset_name`,
 * which the gate refuses (TOOL_USE_MEMBERS).
 */
const AGENT_RUN_TOOL = /^(custom|(bash|text_editor|computer|memory)_\d{8})$/;

/**
 * A message carrying a tool's output the gate cannot tie to a call it released: a tool_result
 * without an id, or the result of a tool the API ran or an MCP server's (web search, code
 * execution, `mcp_tool_result`, …), whose calls the gate never decides.
 */
function unattributable(m: JsonValue): string | null {
  if (!isJsonObject(m)) return 'not a message object';
  if (!Array.isArray(m.content)) return null;
  for (const b of m.content) {
    if (!isJsonObject(b) || !isString(b.type)) continue;
    if (b.type === 'tool_result' && !isString(b.tool_use_id)) return 'a tool_result without a tool_use_id';
    if (b.type !== 'tool_result' && b.type.endsWith('_tool_result')) return 'the result of a tool the gate never decided: it cannot attribute it';
  }
  return null;
}

function undecidable(request: JsonObject): string | null {
  // The MCP connector: the API calls these servers' tools itself.
  if (!absent(request.mcp_servers)) return 'mcp_servers: the model API would call those servers itself, where the gate cannot decide the calls';
  const output = unattributedOutput(request.messages, 'messages', unattributable);
  if (output !== null) return output;
  const tool = undecidableTool(request.tools, (t) => t.type === undefined || t.type === null || (isString(t.type) && AGENT_RUN_TOOL.test(t.type)));
  return tool && `${tool}: a tool the model API runs itself, or a toolset: the gate cannot decide its calls`;
}

/** Blocks the agent reads as text (passed on) or as a call (decided); any other fails closed. */
const BLOCK_TYPES = new Set(['text', 'thinking', 'redacted_thinking', 'tool_use']);

function contentOf(body: JsonObject): JsonObject[] {
  const content = body.content;
  need(Array.isArray(content) && content.every(isJsonObject), null, 'content must be a list of blocks');
  for (const b of content as JsonObject[]) knownBlock(b);
  return content as JsonObject[];
}

function knownBlock(block: JsonObject): void {
  need(isString(block.type) && BLOCK_TYPES.has(block.type), null, 'a content block of a type the gate does not read (a tool the model API ran?)');
}

function bodyCalls(body: JsonObject): Slot<null>[][] {
  const slots: Slot<null>[] = [];
  contentOf(body).forEach((b, index) => {
    if (b.type !== 'tool_use') return;
    onlyReadMembers(b);
    need(isString(b.id) && isString(b.name) && isJsonObject(b.input), null, 'a tool_use block needs an id, a name and an input object');
    slots.push({ index, id: b.id as string, tool: b.name as string, args: b.input as JsonObject, held: null });
  });
  return [slots];
}

function rewriteBody(body: JsonObject, [g]: HeldCalls<null>[]): JsonObject {
  if (g.refused.length === 0) return body;
  const dropped = new Set(g.slots.filter((s) => !s.verdict?.release).map((s) => s.index));
  const content: JsonValue[] = contentOf(body).filter((_, i) => !dropped.has(i));
  // As in a stream: on a line of its own when text came before.
  const after = content.some((b) => isJsonObject(b) && b.type === 'text');
  content.push({ type: 'text', text: `${after ? '\n' : ''}${refusalLines(g)}` });
  const out: JsonObject = { ...body, content };
  if (g.released === 0 && body.stop_reason === 'tool_use') out.stop_reason = 'end_turn';
  return out;
}

function errorBody(text: string, refusal: RefusalData): JsonObject {
  return { type: 'error', error: { type: 'cloakpipe_refused', message: text, cloakpipe: { ...refusal } } };
}

function errorEvent(text: string, refusal: RefusalData): Uint8Array {
  return encodeEvent(JSON.stringify(errorBody(text, refusal)), 'error');
}

interface Held {
  events: { e: SseEvent; data: JsonObject }[];
  stopped: boolean;
}

type Block = { kind: 'pass'; out: number } | { kind: 'tool'; slot: Slot<Held> };

class AnthropicStream implements StreamRewriter {
  private blocks = new Map<number, Block>();
  private nextOut = 0;
  private textOut = false;
  /** The refusals' text block went out (once per message). */
  private reported = false;
  private calls: HeldCalls<Held>;
  /**
   * The calls of messages before this one (a stream that starts a message again): one still
   * being decided then is closed with the stream too, never left allowed and unwritten.
   */
  private readonly earlier: HeldCalls<Held>[] = [];

  constructor(private readonly ctx: StreamContext) {
    this.calls = this.newCalls();
  }

  private newCalls(): HeldCalls<Held> {
    return new HeldCalls<Held>(
      (slot) => this.ctx.decide(slot),
      (slot, position) => this.out(slot, position),
    );
  }

  groups() {
    return [...this.earlier, this.calls];
  }

  async event(e: SseEvent): Promise<void> {
    if (e.data === undefined) return this.ctx.write(e.raw);
    const v = readModelJson(e.data, 'a stream event');
    need(isJsonObject(v) && isString(v.type) && (e.type === undefined || e.type === v.type), null, 'a stream event needs a type');
    const data = v as JsonObject;
    switch (data.type) {
      case 'message_start': {
        // The SDK starts its message from this one: blocks in it would reach the agent ungated.
        const m = data.message;
        need(isJsonObject(m) && (m.content === undefined || (Array.isArray(m.content) && m.content.length === 0)), null, 'a message_start must hold no content');
        this.blocks = new Map();
        this.nextOut = 0;
        this.textOut = false;
        if (this.calls.slots.length > 0) this.earlier.push(this.calls);
        this.calls = this.newCalls();
        this.reported = false;
        return this.ctx.write(e.raw);
      }
      case 'content_block_start':
        return this.start(e, data);
      case 'content_block_delta':
      case 'content_block_stop':
        return this.inBlock(e, data);
      case 'message_delta': {
        await this.end();
        const delta = isJsonObject(data.delta) ? data.delta : {};
        if (delta.stop_reason === 'tool_use' && this.calls.released === 0 && this.calls.slots.length > 0) {
          return this.ctx.write(encodeEvent(JSON.stringify({ ...data, delta: { ...delta, stop_reason: 'end_turn' } }), e.type));
        }
        return this.ctx.write(e.raw);
      }
      default:
        return this.ctx.write(e.raw); // ping, message_stop, the API's own error
    }
  }

  private start(e: SseEvent, data: JsonObject): void {
    need(isIndex(data.index) && !this.blocks.has(data.index as number) && isJsonObject(data.content_block), null, 'a block start needs a new index and a block');
    const index = data.index as number;
    const block = data.content_block as JsonObject;
    knownBlock(block);
    if (block.type === 'tool_use') {
      onlyReadMembers(block);
      need(isString(block.id) && isString(block.name), null, 'a tool_use block needs an id and a name');
      // Readers disagree on a start's input: the official SDK reads it until a delta comes, the
      // AI SDK appends the deltas to it, LangChain never reads it. The API sends it empty.
      need(block.input === undefined || (isJsonObject(block.input) && Object.keys(block.input).length === 0), null, 'a streamed tool_use block must start with an empty input');
      const slot: Slot<Held> = { index, id: block.id as string, tool: block.name as string, args: '', held: { events: [{ e, data }], stopped: false } };
      this.blocks.set(index, { kind: 'tool', slot });
      this.calls.slots.push(slot);
      return;
    }
    const out = this.nextOut++;
    this.blocks.set(index, { kind: 'pass', out });
    this.write(e, data, out);
  }

  private inBlock(e: SseEvent, data: JsonObject): void {
    const block = isIndex(data.index) ? this.blocks.get(data.index as number) : undefined;
    need(block !== undefined, null, 'an event for a block that never started');
    const b = block as Block;
    if (b.kind === 'pass') {
      const delta = isJsonObject(data.delta) ? data.delta : {};
      if (delta.type === 'text_delta' && isString(delta.text) && delta.text !== '') this.textOut = true;
      return this.write(e, data, b.out);
    }
    const { slot } = b;
    need(!slot.held.stopped, null, 'an event for a tool_use block already stopped');
    slot.held.events.push({ e, data });
    if (data.type === 'content_block_stop') return this.complete(slot);
    const delta = data.delta;
    need(isJsonObject(delta) && delta.type === 'input_json_delta' && isString(delta.partial_json), null, 'a tool_use block takes input_json_delta only');
    slot.args = appendBounded(slot.args as string, (delta as JsonObject).partial_json as string, this.ctx.maxArgumentBytes);
  }

  /** The block's input as every reader reads it: the deltas' text, `{}` when there is none. */
  private complete(slot: Slot<Held>): void {
    slot.held.stopped = true;
    if (slot.args === '') slot.args = {};
    this.calls.complete(slot);
  }

  /** An event of a block going out as number `out`: as it came when that is the model's number. */
  private write(e: SseEvent, data: JsonObject, out: number): void {
    if (out === data.index) return this.ctx.write(e.raw);
    this.ctx.write(encodeEvent(JSON.stringify({ ...data, index: out }), e.type));
  }

  private out(slot: Slot<Held>, position: number | null): void {
    if (position === null) {
      const v = slot.verdict;
      if (this.ctx.onRefusal === 'error' && v && !v.release) this.ctx.fail(slot.tool, v.refusal);
      return;
    }
    const out = this.nextOut++;
    for (const { e, data } of slot.held.events) this.write(e, data, out);
  }

  /** Every held call decided; the refusals, if any, as one text block. */
  async end(): Promise<void> {
    for (const s of this.calls.slots) if (!s.held.stopped) this.complete(s); // a block never stopped: its text decides
    await this.calls.settled();
    if (this.calls.refused.length === 0 || this.ctx.onRefusal === 'error' || this.reported) return;
    this.reported = true;
    const index = this.nextOut++;
    const text = `${this.textOut ? '\n' : ''}${refusalLines(this.calls)}`;
    this.ctx.write(encodeEvent(JSON.stringify({ type: 'content_block_start', index, content_block: { type: 'text', text: '' } }), 'content_block_start'));
    this.ctx.write(encodeEvent(JSON.stringify({ type: 'content_block_delta', index, delta: { type: 'text_delta', text } }), 'content_block_delta'));
    this.ctx.write(encodeEvent(JSON.stringify({ type: 'content_block_stop', index }), 'content_block_stop'));
  }

}

/**
 * The members of a tool_use block the gate reads; any other must be null. Readers take the call
 * from more than `name` and `input`: the AI SDK runs a block with a `toolset_name` as that
 * toolset's tool, the block's name moved into its input, so such a block would run a tool the
 * gate never decided. `caller` (programmatic tool calling) only says who asked for the call.
 */
const TOOL_USE_MEMBERS = new Set(['type', 'id', 'name', 'input', 'caller']);

function onlyReadMembers(block: JsonObject): void {
  for (const [k, v] of Object.entries(block)) need(TOOL_USE_MEMBERS.has(k) || v === null, null, 'a tool_use block has a member the gate does not read');
}

export const anthropic: LlmFormat = {
  name: 'anthropic',
  results,
  undecidable,
  bodyCalls,
  rewriteBody,
  errorBody,
  errorEvent,
  stream: (ctx) => new AnthropicStream(ctx),
};
