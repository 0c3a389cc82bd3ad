// An agent on LangChain (`@langchain/openai`, `@langchain/anthropic`), which joins a stream's
// chunks into one message with its own merge (tool call chunks by index, strings appended) and
// reads a streamed Anthropic block from its deltas alone. One turn: the tools of the LLM door's
// manifest bound, the message's `tool_calls` are what a LangChain agent (its ToolNode) runs.
import { ChatOpenAI } from '@langchain/openai';
import { ChatAnthropic } from '@langchain/anthropic';
import type { AIMessageChunk } from '@langchain/core/messages';
import type { Script } from './fake-model.js';
import { API_KEY, TOOLS_OPENAI } from './llm-gate.js';
import type { Format } from './llm-agent.js';

export interface LangChainTurn {
  calls: { name: string; args: unknown }[];
  text: string;
  error?: string;
}

export async function langchainTurn(base: string, format: Format, script: Script, stream: boolean): Promise<LangChainTurn> {
  const model =
    format !== 'anthropic'
      ? new ChatOpenAI({ model: 'gpt-4o-2024-08-06', apiKey: API_KEY, configuration: { baseURL: `${base}/v1` }, maxRetries: 0, streaming: stream, useResponsesApi: format === 'responses' })
      : new ChatAnthropic({ model: 'claude-sonnet-5-5', apiKey: API_KEY, anthropicApiUrl: base, maxRetries: 0, streaming: stream });
  const agent = model.bindTools(TOOLS_OPENAI);
  try {
    let message: AIMessageChunk | undefined;
    if (stream) for await (const c of await agent.stream(JSON.stringify(script))) message = message ? message.concat(c) : c;
    else message = await agent.invoke(JSON.stringify(script));
    return { calls: (message?.tool_calls ?? []).map((c) => ({ name: c.name, args: c.args })), text: message?.text ?? '' };
  } catch (e) {
    return { calls: [], text: '', error: (e as Error).message };
  }
}
