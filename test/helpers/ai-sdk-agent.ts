// An agent on the Vercel AI SDK (`ai` with its OpenAI and Anthropic providers), which reads the
// model's answer with its own parsers, not the official SDKs'. One turn: the model's answer is
// the fake model's script, each tool the LLM door's manifest names runs in process and records
// what it was called with. What the tools record is what this agent ran.
import { generateText, jsonSchema, streamText, tool, type ToolSet } from 'ai';
import { createOpenAI } from '@ai-sdk/openai';
import { createAnthropic } from '@ai-sdk/anthropic';
import type { Script } from './fake-model.js';
import { API_KEY, TOOLS_OPENAI } from './llm-gate.js';
import type { Format } from './llm-agent.js';

export interface Ran {
  name: string;
  args: unknown;
}

/** The tools the agent ran, the text and finish reason it read, and the first error it met (a stream's error event, a failed request). */
export type AiSdkTurn = { ran: Ran[]; text: string; finish: string; error?: string };

function tools(ran: Ran[]): ToolSet {
  const set: ToolSet = {};
  for (const t of TOOLS_OPENAI) {
    const name = t.function.name;
    // Any object: the agent runs whatever the model proposed, so the readings can be compared.
    set[name] = tool({ inputSchema: jsonSchema<Record<string, unknown>>({ type: 'object' }), execute: async (args) => (ran.push({ name, args }), 'done') });
  }
  return set;
}

export async function aiSdkTurn(base: string, format: Format, script: Script, stream: boolean): Promise<AiSdkTurn> {
  const openai = createOpenAI({ baseURL: `${base}/v1`, apiKey: API_KEY });
  const model = format === 'openai' ? openai.chat('gpt-4o-2024-08-06') : format === 'responses' ? openai.responses('gpt-4.1-2025-04-14') : createAnthropic({ baseURL: `${base}/v1`, apiKey: API_KEY })('claude-sonnet-5-5');
  const ran: Ran[] = [];
  const turn = { model, prompt: JSON.stringify(script), tools: tools(ran), maxRetries: 0 };
  let error: string | undefined;
  let text = '';
  let finish = '';
  try {
    if (stream) {
      const r = streamText({ ...turn, onError: ({ error: e }) => void (error ??= (e as Error).message ?? String(e)) });
      await r.consumeStream();
      [text, finish] = [await r.text, await r.finishReason];
    } else {
      const r = await generateText(turn);
      [text, finish] = [r.text, r.finishReason];
    }
  } catch (e) {
    error ??= (e as Error).message;
  }
  return error === undefined ? { ran, text, finish } : { ran, text, finish, error };
}
