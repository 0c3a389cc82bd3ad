// What the LLM door needs from one wire format (OpenAI Chat Completions and Responses,
// Anthropic Messages): where a request carries tool results, where a response proposes calls,
// how a refusal is written into a body or a stream, and how a refusal becomes an error the
// agent's SDK raises.
import { isJsonObject, type JsonObject, type JsonValue } from '../../core/json.js';
import type { RefusalData } from '../../core/outcome.js';
import { WireError } from '../../wire/strict-parse.js';
import type { RawSseEvent as SseEvent } from '../../wire/sse-raw.js';
import { refusalText, type HeldCalls, type Slot } from './held.js';

/** What the door asks of a group of held calls once the response is over. */
export type CallGroup = Pick<HeldCalls<unknown>, 'refused' | 'close'>;
import type { ToolResult, Verdict } from './session.js';

/** A response the door cannot read for sure: refused `fail_closed`, never passed on. */
export class Unreadable extends Error {}

export interface StreamContext {
  write(bytes: Uint8Array): void;
  decide(slot: Slot<unknown>): Promise<Verdict>;
  /** `error`: the first refusal ends the stream with an error event (the SDK raises it). */
  onRefusal: 'rewrite' | 'error';
  /** A refusal in `error` mode: the door writes the error event and stops reading. */
  fail(tool: string, refusal: RefusalData): void;
  /** The largest argument text one call may hold. */
  maxArgumentBytes: number;
}

export interface StreamRewriter {
  /** One upstream event, in order; resolves once everything it allows out is written. */
  event(e: SseEvent): Promise<void>;
  /** The upstream stream ended: every held call is decided and released or refused. */
  end(): Promise<void>;
  /** Every call this stream released (to withdraw them when the stream fails). */
  groups(): CallGroup[];
}

export interface LlmFormat {
  name: 'openai' | 'responses' | 'anthropic';
  /** The tool results a request sends back. */
  results(request: JsonValue): ToolResult[];
  /**
   * What in a request would have tool calls made that the gate cannot decide (tools the model
   * API runs itself), or carries a tool's output to the model in a shape the gate cannot tie to
   * a call it released (so the label could not rise by it): one line naming the member, no
   * value; null when there is none.
   */
  undecidable(request: JsonObject): string | null;
  /** A non-streamed response's calls, one list per choice (OpenAI) or message (Anthropic). */
  bodyCalls(body: JsonObject): Slot<null>[][];
  /** The body with each group's refused calls replaced by text; groups as bodyCalls gave them. */
  rewriteBody(body: JsonObject, groups: HeldCalls<null>[]): JsonObject;
  /** The JSON body of an HTTP error answer with the refusal (403, 502). */
  errorBody(text: string, refusal: RefusalData): JsonObject;
  /** The stream event that ends a stream with the refusal as an API error. */
  errorEvent(text: string, refusal: RefusalData): Uint8Array;
  stream(ctx: StreamContext): StreamRewriter;
}

/** Read a JSON value the door relies on, or fail the response. */
export function need<T>(ok: boolean, value: T, what: string): T {
  if (!ok) throw new Unreadable(what);
  return value;
}

export const isString = (v: unknown): v is string => typeof v === 'string';
export const isIndex = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;

/** Append streamed argument text, bounded. */
export function appendBounded(held: string, more: string, max: number): string {
  if (held.length + more.length > max) throw new WireError('frame_too_large', `tool call arguments longer than ${max} characters`);
  return held + more;
}

/**
 * The first member of a request's list (`messages`, `input`) that `unattributable` names a
 * reason for, as `name[i]: reason`: tool output the gate cannot tie to a call it released.
 */
export function unattributedOutput(list: JsonValue | undefined, name: string, unattributable: (member: JsonValue) => string | null): string | null {
  if (!Array.isArray(list)) return null;
  for (const [i, m] of list.entries()) {
    const why = unattributable(m);
    if (why !== null) return `${name}[${i}]: ${why}`;
  }
  return null;
}

/** A request member that asks for nothing: absent, null or an empty list. */
export const absent = (v: unknown): boolean => v === undefined || v === null || (Array.isArray(v) && v.length === 0);

/** The first of a request's `tools` the gate cannot decide the calls of, as `tools[i]`. */
export function undecidableTool(tools: JsonValue | undefined, decidable: (tool: JsonObject) => boolean): string | null {
  if (absent(tools)) return null;
  if (!Array.isArray(tools)) return 'tools is not a list';
  const i = tools.findIndex((t) => !isJsonObject(t) || !decidable(t));
  return i < 0 ? null : `tools[${i}]`;
}

export const encoder = new TextEncoder();

/**
 * The tools a request's record of the model's calls names, by call id: what a result sent back
 * under an id is the output of. An id named twice, by two tools, names neither.
 */
export class CallNames {
  private readonly names = new Map<string, string | null>();

  add(id: JsonValue | undefined, tool: JsonValue | undefined): void {
    if (!isString(id) || !isString(tool)) return;
    const had = this.names.get(id);
    this.names.set(id, had === undefined || had === tool ? tool : null);
  }

  /** `{ tool }` when one tool is named under `id`, else nothing. */
  of(id: string): { tool?: string } {
    const tool = this.names.get(id);
    return tool ? { tool } : {};
  }
}

/** The text of every refusal of a group, one line each. */
export function refusalLines(group: CallGroup): string {
  return group.refused.map((r) => refusalText(r.tool, r.refusal)).join('\n');
}
