// Loaded with `node --import` in front of the real gate binary, as an operator installs an
// OpenTelemetry SDK: the real SDK's BasicTracerProvider with its InMemorySpanExporter, whose
// finished spans are also appended to $CLOAKPIPE_TEST_SPANS (one JSON line per span) so the
// test process can read what an exporter received.
import { appendFileSync } from 'node:fs';
import { trace } from '@opentelemetry/api';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan, type SpanExporter } from '@opentelemetry/sdk-trace-base';

const out = process.env.CLOAKPIPE_TEST_SPANS;
const memory = new InMemorySpanExporter();
const toFile: SpanExporter = {
  export(spans: ReadableSpan[], done) {
    memory.export(spans, () => undefined);
    if (out)
      for (const s of spans)
        appendFileSync(out, JSON.stringify({ name: s.name, kind: s.kind, attributes: s.attributes, status: s.status, events: s.events, links: s.links }) + '\n');
    done({ code: 0 });
  },
  shutdown: async () => undefined,
};
trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(toFile)] }));
