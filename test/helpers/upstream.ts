// The suite's one recording MCP upstream: a stdio server written against the wire (so a test
// controls every byte it answers), configured by its environment. It is the witness of what
// reached a tool. (misbehaving-upstream.ts is the other kind: it breaks the protocol on purpose.)
//   $UPSTREAM_TOOLS    which tools it serves (CATALOGUES below; or the first argument): recorder
//                      (default), approvals, desk, flow, toggle, suite, paged, confine
//   $RECORD_FILE       one JSON line per tools/call it received, before it acts: {tool, arguments, pid}
//   $DONE_FILE         one JSON line per recorded call once its answer is ready, before it is sent: {tool, at}
//   $RECORD_LINES      every raw line it received, as received
//   $RECORDER_RESULT_BYTES  pads the approvals catalogue's write_note answer with that much text
//   $RECORDER_MODE     how a recording call behaves, without changing the call (and so its
//                      fingerprint): ok (default), slow ($RECORDER_DELAY_MS, default 300), hang
//                      (never answers), die (exits mid-call), crash (exits on the call before it
//                      records or does anything), fail (a result with isError)
//   $DESCRIPTIONS_FILE JSON {tool: description}, re-read at every tools/list (a definition changed mid-session)
//   $TOGGLE_FILE       where the toggle catalogue keeps its switch
// It writes "upstream: started" to stderr (proof the gate passes the upstream's stderr on). A
// request whose method starts with never/ is never answered; other methods answer {}.
import { appendFileSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { suiteFile } from './jsontestsuite.js';

type Json = any;
const env = (k: string) => process.env[k] ?? '';
const out = (s: string | Buffer) => process.stdout.write(s);
const send = (m: object) => out(JSON.stringify(m) + '\n');
const text = (t: string) => ({ content: [{ type: 'text', text: t }] });
/** `bytes` of text that differ from call to call (pages a store cannot share between answers). */
const pad = (bytes: number, seed: number) => (bytes > 0 ? ' ' + Array.from({ length: Math.ceil(bytes / 16) }, (_, i) => ((seed * 2654435761 + i * 40503) >>> 0).toString(16).padStart(16, '0')).join('').slice(0, bytes) : '');

/** What a tool does with a call: a result, a JSON-RPC error, or nothing (it writes or never answers). */
type Answer = { result: Json } | { error: { code: number; message: string } } | { raw: string | Buffer } | 'none' | Promise<Answer>;
interface Tool {
  schema?: Record<string, object>;
  /** Recorded in $RECORD_FILE and subject to $RECORDER_MODE (default true). */
  records?: boolean;
  run(args: Json, id: Json): Answer;
}

const PAGES: Json[][] = [
  [
    {
      name: 'lookup',
      annotations: { readOnlyHint: true },
      inputSchema: {
        type: 'object',
        properties: {
          id: { type: 'string', pattern: '^C[0-9]{6}$' },
          code: { type: 'string', pattern: 'ab+' },
          limit: { type: 'integer', minimum: 1, exclusiveMaximum: 100 },
          score: { type: 'number', exclusiveMinimum: 0 },
          tags: { type: 'array', items: { type: 'string', maxLength: 10 }, maxItems: 5, minItems: 1 },
        },
        required: ['id'],
        additionalProperties: false,
      },
    },
  ],
  [
    {
      name: 'send',
      annotations: { readOnlyHint: false, destructiveHint: true },
      inputSchema: {
        type: 'object',
        properties: {
          to: { type: 'string', format: 'email' },
          body: { type: 'string', minLength: 1, maxLength: 4000 },
          idempotency_key: { type: 'string', maxLength: 64 },
          when: { type: ['string', 'null'], maxLength: 30 },
          options: { type: 'object', properties: { urgent: { type: 'boolean' } }, required: ['urgent'] },
          mode: { const: 'plain' },
          lookahead: { type: 'string', pattern: '^(?!admin).*$' },
        },
        required: ['to', 'body'],
      },
    },
    { name: 'unannotated', inputSchema: { type: 'object', properties: { x: { anyOf: [{ type: 'string' }, { type: 'number' }] } } } },
  ],
  [{ name: 'has space', inputSchema: { type: 'object', properties: {} } }],
];

const str = { type: 'string' };
let done = 0;

const CATALOGUES: Record<string, Record<string, Tool>> = {
  // Raw behaviours for the door's own tests.
  recorder: {
    echo: { run: (args) => ({ result: { ...text('ok'), structuredContent: { received: args } } }) },
    exit_now: { run: () => process.exit(3) },
    hang: { run: () => 'none' },
    slow: { run: () => new Promise<Answer>((r) => setTimeout(() => r({ result: text('late') }), 1500)) },
  },
  // Write tools for approvals and operations: the answer says which call of which process it was.
  approvals: {
    send_email: { schema: { to: str, body: str, idempotency_key: str }, run: (_a) => ({ result: text(`send_email done #${done} by ${process.pid} at ${Date.now()}`) }) },
    // $RECORDER_RESULT_BYTES pads its answer (a store's pages per call, for checkpoint crashes).
    write_note: { schema: { text: str, key: str }, run: () => ({ result: text(`write_note done #${done} by ${process.pid} at ${Date.now()}` + pad(Number(env('RECORDER_RESULT_BYTES') || 0), done)) }) },
    read_note: { schema: { text: str }, records: false, run: () => ({ result: text('a note') }) },
  },
  // The support desk of examples/support-agent.yaml, and list_orders.
  desk: {
    lookup_customer: { schema: { customer_id: str }, run: (a) => ({ result: text(`customer ${a.customer_id}: Ada Lovelace, ada@example.com`) }) },
    list_orders: { schema: { customer_id: str, limit: { type: 'integer' } }, run: () => ({ result: text('O100001, O100002') }) },
    send_email: { schema: { to: str, subject: str, body: str, idempotency_key: str }, run: (a) => ({ result: text(`sent to ${a.to}`) }) },
    issue_refund: { schema: { order_id: str, amount: { type: 'number' }, idempotency_key: str }, run: (a) => ({ result: text(`refunded ${a.order_id}`) }) },
  },
  // Information flow and canaries: what each answers comes from the environment.
  flow: {
    read_record: { schema: { id: str }, run: (a) => ({ result: text(`record ${a.id ?? ''}: ${env('FLOW_RESULT_CANARY') || 'customer data'}`) }) },
    echo: { schema: { text: str }, run: (a) => ({ result: text(a.text ?? '') }) },
    post_public: { schema: { text: str }, run: (a) => ({ result: text(`posted ${String(a.text ?? '').length} characters`) }) },
    post_internal: { schema: { text: str }, run: (a) => ({ result: text(`posted ${String(a.text ?? '').length} characters`) }) },
    post_confidential: { schema: { text: str }, run: (a) => ({ result: text(`posted ${String(a.text ?? '').length} characters`) }) },
    fetch_report: { schema: { key: str }, run: (a) => ({ result: text(`report for ${a.key ?? ''}: quarterly figures`) }) },
    fail_rpc: { schema: { text: str }, run: () => ({ error: { code: -32603, message: `backend said: ${env('FLOW_ERROR_CANARY')}` } }) },
    fail_tool: { schema: { text: str }, run: () => ({ result: { ...text(`tool failed: ${env('FLOW_ERROR_CANARY')}`), isError: true } }) },
    malformed: {
      schema: { text: str },
      // A line that is not JSON, holding a canary, and no answer.
      run: (_a, id) => ({ raw: `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":{"content":[{"type":"text","text":"${env('FLOW_MALFORMED_CANARY')}\n` }),
    },
    noisy: {
      schema: { text: str },
      run: () => {
        process.stderr.write(`upstream stderr: ${env('FLOW_STDERR_CANARY')}\n`);
        return { result: text('noted') };
      },
    },
  },
  // One switch: the same call twice switches it twice (identical call, not idempotent effect).
  toggle: {
    toggle: {
      run: () => {
        const next = position() === 'on' ? 'off' : 'on';
        writeFileSync(env('TOGGLE_FILE') || '/dev/null', next);
        return { result: text(next) };
      },
    },
    position: { run: () => ({ result: text(position()) }) },
  },
  // A JSONTestSuite document, byte for byte, as the result's `doc` member: the reply direction
  // of the strict parser. Arguments: { corpus: 'test_parsing' | 'test_transform', file }.
  suite: {
    doc: {
      run: (a, id) => {
        let doc = suiteFile(a.corpus, a.file);
        if (doc[doc.length - 1] === 0x0a) doc = doc.subarray(0, -1); // whitespace to the document, a line end here
        return { raw: Buffer.concat([Buffer.from(`{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":{"content":[],"doc":`), doc, Buffer.from('}}\n')]) };
      },
    },
  },
  // The confined agent's two sinks (test/confine: aliases notify and publish).
  confine: {
    send_update: { schema: { message: str }, run: () => ({ result: text('ok') }) },
    post_public: { schema: { message: str }, run: () => ({ result: text('ok') }) },
  },
  // For `manifest draft`: tools/list in three pages (cursor "p2", "p3"), schemas holding what a
  // v1 manifest cannot say (PAGES); a call answers with its tool name and arguments.
  paged: Object.fromEntries(
    PAGES.flat().map((t) => [t.name, { records: false, run: (a: Json) => ({ result: text(JSON.stringify({ tool: t.name, arguments: a })) }) }]),
  ),
};

function position(): string {
  const f = env('TOGGLE_FILE');
  return f && existsSync(f) ? readFileSync(f, 'utf8') : 'off';
}

const catalogueName = process.argv[2] || env('UPSTREAM_TOOLS') || 'recorder';
const catalogue = CATALOGUES[catalogueName];
if (!catalogue) throw new Error(`unknown UPSTREAM_TOOLS ${catalogueName}`);
const SERVER_INFO = catalogueName === 'paged' ? { name: 'paged-tools', version: '3.1.4' } : { name: 'recorder', version: '1' };

/** One page of tools/list: the paged catalogue's pages by cursor, the others' tools at once. */
function toolList(cursor: unknown): Json {
  if (catalogueName === 'paged') {
    const page = cursor === 'p2' ? 1 : cursor === 'p3' ? 2 : 0;
    return { tools: PAGES[page], ...(page < 2 ? { nextCursor: `p${page + 2}` } : {}) };
  }
  return { tools: Object.entries(catalogue).map(([name, t]) => ({ name, description: description(name), inputSchema: t.schema ? { type: 'object', properties: t.schema } : { type: 'object' } })) };
}

function description(name: string): string {
  const f = env('DESCRIPTIONS_FILE');
  return f && existsSync(f) ? (JSON.parse(readFileSync(f, 'utf8'))[name] ?? name) : name;
}

async function callTool(id: Json, name: string, args: Json): Promise<void> {
  const tool = Object.prototype.hasOwnProperty.call(catalogue, name) ? catalogue[name] : undefined;
  if (!tool) return void send({ jsonrpc: '2.0', id, error: { code: -32602, message: 'unknown tool' } });
  if (tool.records !== false) {
    if (env('RECORDER_MODE') === 'crash') process.exit(7);
    done += 1;
    if (env('RECORD_FILE')) appendFileSync(env('RECORD_FILE'), JSON.stringify({ tool: name, arguments: args, pid: process.pid }) + '\n');
    const mode = env('RECORDER_MODE') || 'ok';
    if (mode === 'die') process.exit(7);
    if (mode === 'hang') return;
    if (mode === 'slow') await new Promise((r) => setTimeout(r, Number(env('RECORDER_DELAY_MS') || 300)));
    // Held until the test creates the file: a race the test decides, not the scheduler.
    while (mode === 'held' && !existsSync(env('RECORDER_RELEASE_FILE'))) await new Promise((r) => setTimeout(r, 10));
    if (mode === 'fail') return void send({ jsonrpc: '2.0', id, result: { ...text(`failed: ${name} done #${done} by ${process.pid}`), isError: true } });
  }
  const answer = await tool.run(args, id);
  if (tool.records !== false && env('DONE_FILE')) appendFileSync(env('DONE_FILE'), JSON.stringify({ tool: name, at: Date.now() }) + '\n');
  if (answer === 'none') return;
  if ('raw' in answer) return void out(answer.raw);
  send({ jsonrpc: '2.0', id, ...answer });
}

process.stderr.write('upstream: started\n');
createInterface({ input: process.stdin }).on('line', (line) => {
  if (env('RECORD_LINES')) appendFileSync(env('RECORD_LINES'), line + '\n');
  let m: Json;
  try {
    m = JSON.parse(line);
  } catch {
    return;
  }
  const id = m.id;
  if (m.method === 'initialize')
    return send({ jsonrpc: '2.0', id, result: { protocolVersion: m.params.protocolVersion, capabilities: { tools: {}, resources: {} }, serverInfo: SERVER_INFO } });
  if (m.method === 'tools/list') return send({ jsonrpc: '2.0', id, result: toolList(m.params?.cursor) });
  if (m.method === 'tools/call') return void callTool(id, m.params.name, m.params.arguments ?? {});
  if (m.method === 'resources/list') return send({ jsonrpc: '2.0', id, result: { resources: [{ uri: 'note://1', name: 'note' }] } });
  if (m.method === 'resources/read')
    return send({ jsonrpc: '2.0', id, result: { contents: [{ uri: m.params.uri, mimeType: 'text/plain', text: env('FLOW_RESOURCE_TEXT') || 'a note' }] } });
  if (typeof m.method === 'string' && m.method.startsWith('never/')) return;
  if (id !== undefined && m.method) send({ jsonrpc: '2.0', id, result: {} });
});
