// The real gate binary as `cloakpipe llm-proxy` in front of the fake model API, with the
// official OpenAI and Anthropic SDKs as the agent. The manifest covers a refusal of every code
// a proposed call can meet; the policy denies large transfers.
import { join } from 'node:path';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { fixtureFiles, OTEL_PRELOAD, type FixtureFiles } from './cli.js';
import { spawnDoor, type HttpGate } from './http-gate.js';
import { startFakeModel, type FakeModel } from './fake-model.js';

export const LLM_MANIFEST = `version: 1
release: llm-e2e@1
labels: [public, internal, confidential]
tools:
  get_weather: { effect: read, accepts: confidential, arguments: { city: { type: string, max_len: 64, required: true } } }
  read_file: { effect: read, returns: confidential, accepts: confidential, arguments: { path: { type: string, max_len: 200 } } }
  post_public: { effect: write, accepts: public, arguments: { text: { type: string, max_len: 2000 } } }
  send_email:
    effect: write
    accepts: confidential
    arguments: { to: { type: string, one_of_context: task.recipients }, body: { type: string, max_len: 5000 } }
  delete_branch: { effect: write, accepts: confidential, approval: required, arguments: { branch: { type: string, max_len: 100 } } }
  transfer: { effect: write, accepts: confidential, arguments: { amount: { type: number } } }
`;

export const LLM_POLICY = `permit (principal, action, resource);

@id("no-large-transfer")
forbid (principal, action == Action::"call_tool", resource == Tool::"transfer")
when { context.args has amount && context.args.amount.greaterThan(decimal("1000.0")) };
`;

export const LLM_CONTEXT = { task: { id: 'T-llm', recipients: ['alice@example.com'] } };

export interface LlmSetup extends FixtureFiles {
  /** Where the preloaded OpenTelemetry SDK writes the spans it exported. */
  spans: string;
}

export function llmSetup(): LlmSetup {
  const f = fixtureFiles('cloakpipe-llm-', { manifest: LLM_MANIFEST, policy: LLM_POLICY, context: LLM_CONTEXT });
  return { ...f, spans: join(f.dir, 'spans.jsonl') };
}

export type LlmGate = HttpGate;

export function startLlmGate(s: LlmSetup, upstreamUrl: string, flags: string[] = [], o: { otel?: boolean } = {}): Promise<LlmGate> {
  return spawnDoor(
    'llm-proxy',
    ['--home', s.home, '--manifest', s.manifest, '--policy', s.policy, '--context', s.context, '--upstream-url', upstreamUrl, '--listen', '127.0.0.1:0', ...flags],
    { CLOAKPIPE_TEST_SPANS: s.spans },
    o.otel ? OTEL_PRELOAD : [],
  );
}

/** A test file's fake model API and the gate in front of it. */
export async function openLlmWorld(flags: string[] = []): Promise<{ fake: FakeModel; s: LlmSetup; gate: LlmGate }> {
  const fake = await startFakeModel();
  const s = llmSetup();
  return { fake, s, gate: await startLlmGate(s, fake.url, flags) };
}

export async function closeLlmWorld(fake: FakeModel | undefined, gate: LlmGate | undefined): Promise<void> {
  await gate?.stop();
  await fake?.close();
}

export const API_KEY = 'sk-test-agent-key-0123456789';

export function openaiAgent(base: string, headers: Record<string, string> = {}): OpenAI {
  return new OpenAI({ baseURL: `${base}/v1`, apiKey: API_KEY, maxRetries: 0, defaultHeaders: headers });
}

export function anthropicAgent(base: string, headers: Record<string, string> = {}): Anthropic {
  return new Anthropic({ baseURL: base, apiKey: API_KEY, maxRetries: 0, defaultHeaders: headers });
}

export const TOOLS_OPENAI = ['get_weather', 'read_file', 'post_public', 'send_email', 'delete_branch', 'transfer'].map((name) => ({
  type: 'function' as const,
  function: { name, parameters: { type: 'object', properties: {} } },
}));

export const TOOLS_RESPONSES = TOOLS_OPENAI.map((t) => ({ type: 'function' as const, name: t.function.name, parameters: t.function.parameters, strict: false }));

export const TOOLS_ANTHROPIC = TOOLS_OPENAI.map((t) => ({ name: t.function.name, input_schema: { type: 'object' as const, properties: {} } }));
