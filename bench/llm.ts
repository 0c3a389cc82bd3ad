// The latency cloakpipe llm-proxy adds to a streamed model response: to its first text token
// (text is never held) and to the moment a proposed tool call is usable by the agent (its
// finish/stop event, a Responses call's item done; after the call was held, read strictly,
// decided and recorded). Baseline:
// the same request straight to the fake model API, interleaved with the gated one in the same
// run. The fake API paces its events (--gap ms apart), as a model streams tokens.
// Usage: node dist/bench/llm.js [--n 200] [--warmup 20] [--gap 2]
import { spawn, type ChildProcess } from 'node:child_process';
import { startFakeModel, type Script } from '../test/helpers/fake-model.js';
import { CLI, flags, gateFiles, loadNow, machine, ms, ratio, section, stats, table } from './lib.js';

type Format = 'openai' | 'responses' | 'anthropic';

/** When a format's stream shows its first text, and when its call is usable (the finish; a Responses call item done). */
const MARKS: Record<Format, { path: string; text: (seen: string) => boolean; call: (seen: string) => boolean }> = {
  openai: { path: '/v1/chat/completions', text: (s) => /"content":"[^"]/.test(s), call: (s) => s.includes('"finish_reason":"tool_calls"') },
  responses: { path: '/v1/responses', text: (s) => /"response\.output_text\.delta"[^\n]*"delta":"[^"]/.test(s), call: (s) => /"response\.output_item\.done"[^\n]*"type":"function_call"/.test(s) },
  anthropic: { path: '/v1/messages', text: (s) => s.includes('"text_delta"'), call: (s) => s.includes('"stop_reason":"tool_use"') },
};

/** One streamed request; ms from sending it to the first text delta and to the call being usable. */
async function timed(base: string, format: Format, script: Script): Promise<{ text: number; call: number }> {
  const openai = format !== 'anthropic';
  const mark = MARKS[format];
  const t0 = performance.now();
  const content = JSON.stringify(script);
  const r = await fetch(`${base}${mark.path}`, {
    method: 'POST',
    headers: openai ? { 'content-type': 'application/json', authorization: 'Bearer sk-bench' } : { 'content-type': 'application/json', 'x-api-key': 'sk-bench', 'anthropic-version': '2023-06-01' },
    body: JSON.stringify({ model: 'bench', stream: true, ...(format === 'responses' ? { input: content } : { max_tokens: 256, messages: [{ role: 'user', content }] }) }),
  });
  let seen = '';
  let text = -1;
  let call = -1;
  const decoder = new TextDecoder();
  for await (const chunk of r.body as unknown as AsyncIterable<Uint8Array>) {
    seen += decoder.decode(chunk, { stream: true });
    const now = performance.now() - t0;
    if (text < 0 && mark.text(seen)) text = now;
    if (call < 0 && mark.call(seen)) call = now;
  }
  if (text < 0 || call < 0) throw new Error(`${format}: the stream lacked its text or its call: ${seen.slice(0, 300)}`);
  return { text, call };
}

async function startGate(upstream: string): Promise<{ url: string; child: ChildProcess }> {
  // The benchmarks' own manifest, policy (Cedar evaluates the arguments) and context.
  const g = gateFiles();
  const child = spawn(process.execPath, [CLI, 'llm-proxy', '--home', g.home, '--manifest', g.manifest, '--policy', g.policy, '--context', g.context, '--upstream-url', upstream, '--listen', '127.0.0.1:0'], { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  const url = await new Promise<string>((resolve, reject) => {
    child.stderr!.on('data', (d: Buffer) => {
      err += d.toString();
      const m = /listening on (http:\/\/\S+)/.exec(err);
      if (m) resolve(m[1]);
    });
    child.on('exit', (code) => reject(new Error(`llm-proxy exited ${code}: ${err}`)));
  });
  return { url, child };
}

async function main(): Promise<void> {
  const f = flags({ gap: { type: 'string', default: '2' } }, { n: 200, warmup: 20 });
  const gap = Number(f.values.gap);
  const fake = await startFakeModel();
  const gate = await startGate(fake.url);
  const script: Script = { text: 'Let me look that up for you right away.', calls: [{ name: 'echo', arguments: { message: 'the weather in Reykjavík, tomorrow' } }], split: 8, delayMs: gap };
  const load = loadNow();
  const rows: (string | number)[][] = [];
  try {
    for (const format of ['openai', 'responses', 'anthropic'] as const) {
      const direct: { text: number; call: number }[] = [];
      const gated: { text: number; call: number }[] = [];
      for (let i = 0; i < f.warmup; i++) await Promise.all([timed(fake.url, format, script), timed(gate.url, format, script)]);
      for (let i = 0; i < f.n; i++) {
        // Interleaved, one at a time: the same load for both paths.
        direct.push(await timed(fake.url, format, script));
        gated.push(await timed(gate.url, format, script));
      }
      for (const what of ['text', 'call'] as const) {
        const d = stats(direct.map((x) => x[what]));
        const g = stats(gated.map((x) => x[what]));
        const label = what === 'text' ? 'first text token' : format === 'responses' ? 'tool call usable (its item done)' : 'tool call usable (finish event)';
        rows.push([`${format}: ${label}`, ms(d.p50), ms(g.p50), ms(g.p50 - d.p50), ratio(g.p50, d.p50), ms(d.p99), ms(g.p99), ms(g.p99 - d.p99)]);
      }
    }
  } finally {
    gate.child.kill('SIGTERM');
    await fake.close();
  }
  section(
    `LLM door: added latency on a streamed response, ${f.n} requests per path, events ${gap} ms apart`,
    `${machine()}\n\n${table(['what', 'direct p50 ms', 'gate p50 ms', 'added p50 ms', 'ratio', 'direct p99 ms', 'gate p99 ms', 'added p99 ms'], rows)}\n\nload before the run: ${load}; after: ${loadNow()}`,
  );
}

await main();
