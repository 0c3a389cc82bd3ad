// Decision spans with the real OpenTelemetry SDK: the attributes are there, payloads are not,
// and a failing exporter or processor neither breaks the call nor speaks through our output.
import { test, beforeEach } from 'node:test';
import assert from 'node:assert/strict';
import { diag, DiagConsoleLogger, DiagLogLevel, trace } from '@opentelemetry/api';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan, type SpanExporter, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { guardOtelDiagnostics, spanDecision, telemetryFailures, SPAN_NAME, decisionFields } from '../../src/telemetry/spans.js';
import { sanitize, setDeclaredTools } from '../../src/telemetry/fields.js';
import { reportDecision } from '../../src/telemetry/decision.js';
import { setLogSink } from '../../src/telemetry/log.js';
import { digestJson } from '../../src/core/digest.js';
import { canary, captureOutput } from '../helpers/capture.js';

function install(...processors: SpanProcessor[]): BasicTracerProvider {
  trace.disable();
  const provider = new BasicTracerProvider({ spanProcessors: processors });
  assert.ok(trace.setGlobalTracerProvider(provider));
  return provider;
}

const dump = (spans: ReadableSpan[]) =>
  JSON.stringify(spans.map((s) => ({ name: s.name, attributes: s.attributes, events: s.events, status: s.status, links: s.links })));

beforeEach(() => setDeclaredTools(['lookup_customer']));

test('a decision span carries tool, outcome, reason, fingerprint, label, entry and timings', async () => {
  const exporter = new InMemorySpanExporter();
  install(new SimpleSpanProcessor(exporter));
  const fp = digestJson({ v: 1 });
  const start = Date.now() - 50;
  spanDecision({
    tool: 'lookup_customer', declared: true, outcome: 'refuse', reason: 'sink_ceiling_exceeded', fingerprint: fp,
    sessionLabel: 'confidential', entry: 12, mode: 'enforce', startTime: start, timings: { decideMs: 0.4, commitMs: 2, upstreamMs: 30 },
  });
  const [span] = exporter.getFinishedSpans();
  assert.equal(span.name, SPAN_NAME);
  assert.deepEqual(span.attributes, {
    'cloakpipe.tool': 'lookup_customer',
    'cloakpipe.outcome': 'refuse',
    'cloakpipe.reason': 'sink_ceiling_exceeded',
    'cloakpipe.fingerprint': fp,
    'cloakpipe.session_label': 'confidential',
    'cloakpipe.entry': 12,
    'cloakpipe.mode': 'enforce',
    'cloakpipe.decide_ms': 0.4,
    'cloakpipe.commit_ms': 2,
    'cloakpipe.upstream_ms': 30,
  });
  assert.equal(span.status.code, 2); // ERROR
  assert.equal(span.status.message, undefined);
  assert.equal(Math.round(span.startTime[0] * 1000 + span.startTime[1] / 1e6), start);
});

test('an undeclared tool name is written as its digest; canaries anywhere in the input never reach a span', () => {
  const exporter = new InMemorySpanExporter();
  install(new SimpleSpanProcessor(exporter));
  const c = canary('span');
  spanDecision({ tool: c, declared: false, outcome: 'refuse', reason: 'undeclared_tool', fingerprint: digestJson(c) });
  // Misuse: values outside their kind are dropped, not written.
  spanDecision({ tool: 'lookup_customer', declared: true, outcome: c as never, reason: c as never, fingerprint: c as never, sessionLabel: `${c} x`, entry: c as never });
  const spans = exporter.getFinishedSpans();
  assert.equal(spans.length, 2);
  assert.equal(spans[0].attributes['cloakpipe.tool_digest'], digestJson(c));
  assert.equal(spans[0].attributes['cloakpipe.tool'], undefined);
  assert.ok(!dump(spans).includes(c), dump(spans));
  assert.equal(spans[1].attributes['cloakpipe.redacted'], 5);
});

test('decisionFields is the same allow-listed view for the decision log line', () => {
  assert.deepEqual(decisionFields({ tool: 'x', declared: false, outcome: 'allow' }), { tool_digest: digestJson('x'), outcome: 'allow', reason: undefined, fingerprint: undefined, session_label: undefined, entry: undefined, mode: undefined, decide_ms: undefined, commit_ms: undefined, upstream_ms: undefined });
});

test('reportDecision: the span and the log line carry the same sanitized fields, canaries in neither', () => {
  const exporter = new InMemorySpanExporter();
  install(new SimpleSpanProcessor(exporter));
  const lines: string[] = [];
  setLogSink((l) => void lines.push(l));
  try {
    const c = canary('report');
    reportDecision({ tool: c, declared: false, outcome: 'refuse', reason: 'undeclared_tool', fingerprint: digestJson(c), sessionLabel: `${c} x`, entry: 7, mode: 'enforce' });
    const [span] = exporter.getFinishedSpans();
    const { ts, level, event, ...logged } = JSON.parse(lines[0]);
    assert.equal(event, 'decision');
    const attrs = Object.fromEntries(Object.entries(span.attributes).map(([k, v]) => [k.slice('cloakpipe.'.length), v]));
    assert.deepEqual(attrs, logged);
    assert.equal(logged.tool_digest, digestJson(c));
    assert.equal(logged.redacted, 1); // the label with a space
    assert.ok(!lines[0].includes(c) && !dump([span]).includes(c));
    void ts, void level;
  } finally {
    setLogSink(null);
  }
});

test('what sanitize returns is frozen: nothing can be added to it between the span and the log line', () => {
  const out = sanitize({ outcome: 'allow' });
  assert.ok(Object.isFrozen(out));
  assert.throws(() => ((out as Record<string, unknown>).argument = 'secret'), TypeError);
  assert.equal(sanitize(out), out);
});

test('a failing exporter and failing processors: the call goes on, nothing of theirs reaches our output', async () => {
  const c = canary('exporter');
  const lines: string[] = [];
  setLogSink((l) => void lines.push(l));
  // The operator's SDK set a console diag logger (as OTEL_LOG_LEVEL does); the gate's guard wins.
  diag.setLogger(new DiagConsoleLogger(), { logLevel: DiagLogLevel.ALL, suppressOverrideMessage: true });
  guardOtelDiagnostics();
  const throwingExporter: SpanExporter = {
    export: () => {
      throw new Error(`exporter exploded: ${c}`);
    },
    shutdown: async () => undefined,
  };
  const failingExporter: SpanExporter = {
    export: (_spans, cb) => cb({ code: 1, error: new Error(`export failed: ${c}`) }),
    shutdown: async () => undefined,
  };
  const throwingProcessor: SpanProcessor = {
    onStart: () => {
      throw new Error(`onStart: ${c}`);
    },
    onEnd: () => {
      throw new Error(`onEnd: ${c}`);
    },
    forceFlush: async () => undefined,
    shutdown: async () => undefined,
  };
  const endThrower: SpanProcessor = {
    onStart: () => undefined,
    onEnd: () => {
      throw new Error(`onEnd only: ${c}`);
    },
    forceFlush: async () => undefined,
    shutdown: async () => undefined,
  };
  const memory = new InMemorySpanExporter();
  const unhandled: unknown[] = [];
  const onUnhandled = (e: unknown) => void unhandled.push(e);
  process.on('unhandledRejection', onUnhandled);
  const cap = captureOutput();
  const before = telemetryFailures();
  try {
    for (const processors of [[new SimpleSpanProcessor(throwingExporter)], [new SimpleSpanProcessor(failingExporter)], [throwingProcessor], [new SimpleSpanProcessor(memory), endThrower]]) {
      install(...processors);
      assert.doesNotThrow(() => spanDecision({ tool: 'lookup_customer', declared: true, outcome: 'allow', fingerprint: digestJson(1) }));
    }
    await new Promise((r) => setTimeout(r, 50));
  } finally {
    cap.restore();
    process.off('unhandledRejection', onUnhandled);
    setLogSink(null);
  }
  assert.equal(unhandled.length, 0);
  assert.ok(telemetryFailures() - before >= 4, `failures counted: ${telemetryFailures() - before}`);
  const everything = cap.text() + lines.join('');
  assert.ok(!everything.includes(c), everything);
  assert.ok(!everything.includes('exploded') && !everything.includes('failed:'));
  // What we do say is a count.
  const said = lines.map((l) => JSON.parse(l));
  assert.ok(said.every((o) => o.event === 'telemetry_failure' && Object.keys(o).every((k) => ['ts', 'level', 'event', 'component', 'failures'].includes(k))));
  // The span that reached the healthy exporter is intact.
  assert.equal(memory.getFinishedSpans().length, 1);
});

test('no SDK installed: spans are no-ops and cost nothing', () => {
  trace.disable();
  const before = telemetryFailures();
  spanDecision({ tool: 'lookup_customer', declared: true, outcome: 'allow' });
  assert.equal(telemetryFailures(), before);
});
