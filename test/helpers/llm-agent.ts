// One turn of an agent through the official SDKs (streamed or not), read back the way an agent
// framework reads it: the text, the proposed calls, the finish/stop reason. A raw turn is the
// same request by fetch, for byte comparisons.
import type OpenAI from 'openai';
import type Anthropic from '@anthropic-ai/sdk';
import type { Script } from './fake-model.js';
import { API_KEY, TOOLS_ANTHROPIC, TOOLS_OPENAI, TOOLS_RESPONSES } from './llm-gate.js';

export type Format = 'openai' | 'responses' | 'anthropic';

/** Every wire format, streamed and not. */
export const COMBOS: { format: Format; stream: boolean }[] = [
  { format: 'openai', stream: false },
  { format: 'openai', stream: true },
  { format: 'responses', stream: false },
  { format: 'responses', stream: true },
  { format: 'anthropic', stream: false },
  { format: 'anthropic', stream: true },
];

export interface Turn {
  text: string;
  calls: { id: string; name: string; args: unknown }[];
  finish: string | null;
}

export interface History {
  /** Earlier messages (a tool result going back), in the format's own shape. */
  messages?: unknown[];
}

export function openaiParams(script: Script, stream: boolean, h: History = {}) {
  return {
    model: 'gpt-4o-2024-08-06',
    messages: [...((h.messages as never[]) ?? []), { role: 'user' as const, content: JSON.stringify(script) }],
    tools: TOOLS_OPENAI,
    ...(stream ? { stream: true as const, stream_options: { include_usage: true } } : {}),
  };
}

export function responsesParams(script: Script, stream: boolean, h: History = {}) {
  return {
    model: 'gpt-4.1-2025-04-14',
    input: [...((h.messages as never[]) ?? []), { role: 'user' as const, content: JSON.stringify(script) }],
    tools: TOOLS_RESPONSES,
    ...(stream ? { stream: true as const } : {}),
  };
}

export function anthropicParams(script: Script, stream: boolean, h: History = {}) {
  return {
    model: 'claude-sonnet-5-5',
    max_tokens: 1024,
    messages: [...((h.messages as never[]) ?? []), { role: 'user' as const, content: JSON.stringify(script) }],
    tools: TOOLS_ANTHROPIC,
    ...(stream ? { stream: true as const } : {}),
  };
}

export async function openaiTurn(client: OpenAI, script: Script, stream: boolean, h: History = {}): Promise<Turn> {
  const { stream: _s, ...params } = openaiParams(script, stream, h);
  const c = stream ? await client.chat.completions.stream(params).finalChatCompletion() : await client.chat.completions.create(params);
  const ch = c.choices[0];
  return {
    text: ch.message.content ?? '',
    calls: (ch.message.tool_calls ?? []).map((t) => {
      if (t.type !== 'function') throw new Error('not a function call');
      return { id: t.id, name: t.function.name, args: JSON.parse(t.function.arguments) };
    }),
    finish: ch.finish_reason,
  };
}

/**
 * A Responses turn as an agent loop reads it: the text of its message items, its function calls
 * (run when there are any), the response's status. Streamed, the SDK's final response is the
 * snapshot its events built, replaced by the final event's response.
 */
export async function responsesTurn(client: OpenAI, script: Script, stream: boolean, h: History = {}): Promise<Turn> {
  const { stream: _s, ...params } = responsesParams(script, stream, h);
  const r = stream ? await client.responses.stream(params).finalResponse() : await client.responses.create(params);
  return {
    text: r.output_text,
    calls: r.output.flatMap((i) => (i.type === 'function_call' ? [{ id: i.call_id, name: i.name, args: JSON.parse(i.arguments) }] : [])),
    finish: r.status ?? null,
  };
}

export async function anthropicTurn(client: Anthropic, script: Script, stream: boolean, h: History = {}): Promise<Turn> {
  const { stream: _s, ...params } = anthropicParams(script, stream, h);
  const m = stream ? await client.messages.stream(params).finalMessage() : await client.messages.create(params);
  return {
    text: m.content.map((b) => (b.type === 'text' ? b.text : '')).join(''),
    calls: m.content.flatMap((b) => (b.type === 'tool_use' ? [{ id: b.id, name: b.name, args: b.input }] : [])),
    finish: m.stop_reason,
  };
}

/** The same request an SDK would send, by fetch; the response's status and exact bytes. */
export async function rawTurn(base: string, format: Format, script: Script, stream: boolean): Promise<{ status: number; bytes: Buffer; type: string }> {
  const anthropic = format === 'anthropic';
  const path = { openai: '/v1/chat/completions', responses: '/v1/responses', anthropic: '/v1/messages' }[format];
  const params = { openai: openaiParams, responses: responsesParams, anthropic: anthropicParams }[format](script, stream);
  const r = await fetch(`${base}${path}`, {
    method: 'POST',
    headers: anthropic ? { 'content-type': 'application/json', 'x-api-key': API_KEY, 'anthropic-version': '2023-06-01' } : { 'content-type': 'application/json', authorization: `Bearer ${API_KEY}` },
    body: JSON.stringify(params),
  });
  return { status: r.status, bytes: Buffer.from(await r.arrayBuffer()), type: r.headers.get('content-type') ?? '' };
}
