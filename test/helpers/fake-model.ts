// A local model API that answers in the shapes the real OpenAI Chat Completions and Anthropic
// Messages APIs send (field for field as recorded from them: ids, usage, system fingerprint,
// the role chunk, empty first argument fragments, ping events, usage chunks), and OpenAI
// Responses as its API reference documents them (the response object, items added, filled and
// done, sequence numbers, obfuscation fields), streamed or not.
// What it answers is a script the test writes as the last user message: the text before,
// the calls (arguments as an object, or as raw text to send a malformed fragment), the text
// after, how many pieces each call's arguments are cut into, and a pause between events.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { listenLocal } from './local-http.js';

export interface ScriptCall {
  name: string;
  arguments?: Record<string, unknown>;
  /** The arguments' text exactly (a malformed fragment, a duplicate key). */
  raw?: string;
  id?: string;
  /** Adds an argument `pad` of this many characters (a response larger than its request). */
  pad?: number;
}

export interface Script {
  text?: string;
  calls?: ScriptCall[];
  /** Text after the calls (OpenAI: content deltas after the call; Anthropic: a text block after). */
  after?: string;
  /** Pieces each call's arguments are streamed in (default 3). */
  split?: number;
  /** Milliseconds between stream events (default 0). */
  delayMs?: number;
  /** Send this body as it is (non-streamed) or these events as they are (streamed). */
  rawBody?: string;
  /** Cut the stream after this many events. */
  cutAfter?: number;
  /** Hold back the stream's last this many events: it stalls, open, until the client leaves. */
  holdLast?: number;
}

export interface Seen {
  path: string;
  headers: IncomingMessage['headers'];
  body: any;
}

export interface FakeModel {
  url: string;
  server: Server;
  seen: Seen[];
  close(): Promise<void>;
}

const CREATED = 1764547200;

/** The script a request carries: the last user message's text, as JSON. */
function scriptOf(body: any): Script {
  const turns = typeof body.input === 'string' ? [{ role: 'user', content: body.input }] : (body.messages ?? body.input ?? []);
  const last = [...turns].reverse().find((m: any) => m.role === 'user');
  let text = typeof last?.content === 'string' ? last.content : '';
  if (Array.isArray(last?.content)) text = last.content.filter((b: any) => b.type === 'text' || b.type === 'input_text').map((b: any) => b.text).join('');
  try {
    return JSON.parse(text) as Script;
  } catch {
    return { text: 'Hello! How can I help you today?' };
  }
}

function pieces(s: string, n: number): string[] {
  if (n <= 1 || s.length === 0) return [s];
  const size = Math.max(1, Math.ceil(s.length / n));
  const out: string[] = [];
  for (let i = 0; i < s.length; i += size) out.push(s.slice(i, i + size));
  return out;
}

const argsOf = (c: ScriptCall) => ({ ...(c.arguments ?? {}), ...(c.pad ? { pad: 'x'.repeat(c.pad) } : {}) });
const argsText = (c: ScriptCall) => c.raw ?? JSON.stringify(argsOf(c));
const callId = (c: ScriptCall, i: number, prefix: string) => c.id ?? `${prefix}${String(i + 1).padStart(2, '0')}Xk3qZ9vTbLmN8pR2sW4yU6`;

// ── OpenAI Chat Completions ──────────────────────────────────────────────────────────────────

function openaiBody(s: Script, model: string): string {
  const calls = s.calls ?? [];
  const content = [s.text, s.after].filter((t) => t !== undefined).join('') || null;
  const message: any = { role: 'assistant', content, refusal: null, annotations: [] };
  if (calls.length > 0)
    message.tool_calls = calls.map((c, i) => ({ id: callId(c, i, 'call_'), type: 'function', function: { name: c.name, arguments: argsText(c) } }));
  return JSON.stringify(
    {
      id: 'chatcmpl-CXa9ZfakeQ2mWn8Lr1',
      object: 'chat.completion',
      created: CREATED,
      model,
      choices: [{ index: 0, message, logprobs: null, finish_reason: calls.length > 0 ? 'tool_calls' : 'stop' }],
      usage: { prompt_tokens: 82, completion_tokens: 17, total_tokens: 99, prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 }, completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 } },
      service_tier: 'default',
      system_fingerprint: 'fp_cbf1785567',
    },
    null,
    2,
  );
}

function openaiEvents(s: Script, model: string, usage: boolean): string[] {
  const head = { id: 'chatcmpl-CXa9ZfakeQ2mWn8Lr1', object: 'chat.completion.chunk', created: CREATED, model, service_tier: 'default', system_fingerprint: 'fp_cbf1785567' };
  const chunk = (delta: object, finish: string | null = null) => `data: ${JSON.stringify({ ...head, choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] })}\n\n`;
  const calls = s.calls ?? [];
  const out: string[] = [];
  let role = true;
  const roleOnce = () => (role ? ((role = false), { role: 'assistant' }) : {});
  if (s.text !== undefined) {
    out.push(chunk({ ...roleOnce(), content: '', refusal: null }));
    for (const p of pieces(s.text, 4)) out.push(chunk({ content: p }));
  }
  calls.forEach((c, index) => {
    const first = { index, id: callId(c, index, 'call_'), type: 'function', function: { name: c.name, arguments: '' } };
    out.push(chunk(role ? { ...roleOnce(), content: null, tool_calls: [first], refusal: null } : { tool_calls: [first] }));
    for (const p of pieces(argsText(c), s.split ?? 3)) out.push(chunk({ tool_calls: [{ index, function: { arguments: p } }] }));
  });
  if (s.after !== undefined) for (const p of pieces(s.after, 2)) out.push(chunk({ ...roleOnce(), content: p }));
  out.push(chunk({}, calls.length > 0 ? 'tool_calls' : 'stop'));
  if (usage) out.push(`data: ${JSON.stringify({ ...head, choices: [], usage: { prompt_tokens: 82, completion_tokens: 17, total_tokens: 99 } })}\n\n`);
  out.push('data: [DONE]\n\n');
  return out;
}

// ── OpenAI Responses ─────────────────────────────────────────────────────────────────────────

const RESPONSE_ID = 'resp_68f1c0a9fake7b6c5d4e3f2a1b0c9d8e7f60012345';

/** The response object, as the API sends it (in the final event too), with its output items. */
function responseObject(s: Script, model: string, status: 'in_progress' | 'completed', tools: unknown): any {
  return {
    id: RESPONSE_ID,
    object: 'response',
    created_at: CREATED,
    status,
    background: false,
    error: null,
    incomplete_details: null,
    instructions: null,
    max_output_tokens: null,
    max_tool_calls: null,
    model,
    output: status === 'completed' ? responseItems(s) : [],
    parallel_tool_calls: true,
    previous_response_id: null,
    prompt_cache_key: null,
    reasoning: { effort: null, summary: null },
    safety_identifier: null,
    service_tier: 'default',
    store: true,
    temperature: 1.0,
    text: { format: { type: 'text' }, verbosity: 'medium' },
    tool_choice: 'auto',
    tools: tools ?? [],
    top_logprobs: 0,
    top_p: 1.0,
    truncation: 'disabled',
    usage: status === 'completed' ? { input_tokens: 82, input_tokens_details: { cached_tokens: 0 }, output_tokens: 17, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 99 } : null,
    user: null,
    metadata: {},
  };
}

const messageItem = (id: string, text: string) => ({ id, type: 'message', status: 'completed', content: [{ type: 'output_text', annotations: [], logprobs: [], text }], role: 'assistant' });
const callItem = (c: ScriptCall, i: number) => ({ id: `fc_68f1c0${i}fake`, type: 'function_call', status: 'completed', arguments: argsText(c), call_id: callId(c, i, 'call_'), name: c.name });

function responseItems(s: Script): any[] {
  const items: any[] = [];
  if (s.text !== undefined) items.push(messageItem('msg_68f1c0afake01', s.text));
  (s.calls ?? []).forEach((c, i) => items.push(callItem(c, i)));
  if (s.after !== undefined) items.push(messageItem('msg_68f1c0afake02', s.after));
  return items;
}

function responsesEvents(s: Script, model: string, tools: unknown): string[] {
  const out: string[] = [];
  let seq = 0;
  const ev = (type: string, data: object) => out.push(`event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: seq++, ...data })}\n\n`);
  ev('response.created', { response: responseObject(s, model, 'in_progress', tools) });
  ev('response.in_progress', { response: responseObject(s, model, 'in_progress', tools) });
  responseItems(s).forEach((item, output_index) => {
    if (item.type === 'message') {
      const text = item.content[0].text;
      const at = { item_id: item.id, output_index, content_index: 0 };
      ev('response.output_item.added', { output_index, item: { ...item, status: 'in_progress', content: [] } });
      ev('response.content_part.added', { ...at, part: { type: 'output_text', annotations: [], logprobs: [], text: '' } });
      for (const p of pieces(text, 4)) ev('response.output_text.delta', { ...at, delta: p, logprobs: [], obfuscation: 'Xq3' });
      ev('response.output_text.done', { ...at, text, logprobs: [] });
      ev('response.content_part.done', { ...at, part: item.content[0] });
    } else {
      ev('response.output_item.added', { output_index, item: { ...item, status: 'in_progress', arguments: '' } });
      for (const p of pieces(item.arguments, s.split ?? 3)) ev('response.function_call_arguments.delta', { item_id: item.id, output_index, delta: p, obfuscation: 'k9' });
      ev('response.function_call_arguments.done', { item_id: item.id, output_index, arguments: item.arguments });
    }
    ev('response.output_item.done', { output_index, item });
  });
  ev('response.completed', { response: responseObject(s, model, 'completed', tools) });
  return out;
}

// ── Anthropic Messages ───────────────────────────────────────────────────────────────────────

function anthropicBlocks(s: Script): any[] {
  const blocks: any[] = [];
  if (s.text !== undefined) blocks.push({ type: 'text', text: s.text });
  (s.calls ?? []).forEach((c, i) => blocks.push({ type: 'tool_use', id: callId(c, i, 'toolu_01'), name: c.name, input: c.raw !== undefined ? JSON.parse(c.raw) : argsOf(c) }));
  if (s.after !== undefined) blocks.push({ type: 'text', text: s.after });
  return blocks;
}

function anthropicBody(s: Script, model: string): string {
  const calls = s.calls ?? [];
  return JSON.stringify({
    id: 'msg_01XFDUDYJgAACzvnptvVoYEL',
    type: 'message',
    role: 'assistant',
    model,
    content: anthropicBlocks(s),
    stop_reason: calls.length > 0 ? 'tool_use' : 'end_turn',
    stop_sequence: null,
    usage: { input_tokens: 472, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 89, service_tier: 'standard' },
  });
}

function anthropicEvents(s: Script, model: string): string[] {
  const ev = (type: string, data: object) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
  const out = [
    ev('message_start', {
      message: { id: 'msg_01XFDUDYJgAACzvnptvVoYEL', type: 'message', role: 'assistant', model, content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 472, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 2, service_tier: 'standard' } },
    }),
  ];
  let index = 0;
  const text = (t: string) => {
    out.push(ev('content_block_start', { index, content_block: { type: 'text', text: '' } }));
    if (index === 0) out.push(ev('ping', {}));
    for (const p of pieces(t, 4)) out.push(ev('content_block_delta', { index, delta: { type: 'text_delta', text: p } }));
    out.push(ev('content_block_stop', { index }));
    index++;
  };
  if (s.text !== undefined) text(s.text);
  (s.calls ?? []).forEach((c, i) => {
    out.push(ev('content_block_start', { index, content_block: { type: 'tool_use', id: callId(c, i, 'toolu_01'), name: c.name, input: {} } }));
    out.push(ev('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: '' } }));
    for (const p of pieces(argsText(c), s.split ?? 3)) out.push(ev('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: p } }));
    out.push(ev('content_block_stop', { index }));
    index++;
  });
  if (s.after !== undefined) text(s.after);
  out.push(ev('message_delta', { delta: { stop_reason: (s.calls ?? []).length > 0 ? 'tool_use' : 'end_turn', stop_sequence: null }, usage: { output_tokens: 89 } }));
  out.push(ev('message_stop', {}));
  return out;
}

// ── the server ───────────────────────────────────────────────────────────────────────────────

export async function startFakeModel(): Promise<FakeModel> {
  const seen: Seen[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      seen.push({ path: req.url ?? '', headers: req.headers, body });
      const s = scriptOf(body);
      const anthropic = (req.url ?? '').endsWith('/messages');
      const responses = (req.url ?? '').endsWith('/responses');
      const model = body.model ?? (anthropic ? 'claude-sonnet-5-5' : 'gpt-4o-2024-08-06');
      const requestId = anthropic ? { 'request-id': 'req_011CXfakeReq' } : { 'x-request-id': 'req_6f1c0fake' };
      if (!body.stream) {
        const text = s.rawBody ?? (anthropic ? anthropicBody(s, model) : responses ? JSON.stringify(responseObject(s, model, 'completed', body.tools), null, 2) : openaiBody(s, model));
        res.writeHead(200, { 'content-type': 'application/json', ...requestId });
        return void res.end(text);
      }
      res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', ...requestId });
      const events = s.rawBody !== undefined ? [s.rawBody] : anthropic ? anthropicEvents(s, model) : responses ? responsesEvents(s, model, body.tools) : openaiEvents(s, model, body.stream_options?.include_usage === true);
      const list = s.cutAfter !== undefined ? events.slice(0, s.cutAfter) : events;
      let i = 0;
      const held = list.length - (s.holdLast ?? 0);
      const next = () => {
        if (i >= held && i < list.length) return; // stalled: the connection stays open
        if (i >= list.length || res.destroyed) return void res.end();
        res.write(list[i++]);
        if (s.delayMs) setTimeout(next, s.delayMs);
        else setImmediate(next);
      };
      next();
    });
  });
  // Its clients (the SDKs straight, the gate) reuse an idle connection for about 4 s; on a loaded
  // machine their timers run late, and one this server had closed at Node's 5 s was reused:
  // 'other side closed'. It keeps them longer than any client does, as the gate does its own.
  server.keepAliveTimeout = 65_000;
  return { ...(await listenLocal(server)), server, seen };
}
