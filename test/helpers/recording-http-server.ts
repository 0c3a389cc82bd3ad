// A small MCP server on the official SDK (McpServer + StreamableHTTPServerTransport, one
// transport per session) that records the headers of every request it receives, can require a
// bearer token (401 without it), and can be resumable (an event store: SSE event ids, replay
// after Last-Event-ID). Its `slow_write` tool closes the POST's event stream before it answers
// when asked to (the SDK's closeSSEStream: the client is expected to resume with GET).
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { z } from 'zod';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport, type EventStore } from '@modelcontextprotocol/sdk/server/streamableHttp.js';

export interface RecordingServer {
  url: string;
  server: Server;
  /** Every request: method and headers (lower-case names). */
  seen: { method: string; headers: IncomingMessage['headers'] }[];
  /** Notes `slow_write` stored (the call reached the tool). */
  writes: string[];
  close(): Promise<void>;
}

export interface RecordingOptions {
  /** The Authorization value every request must carry (else 401). */
  authorization?: string;
  /** Keep events for replay (SSE event ids). */
  resumable?: boolean;
  /** `slow_write` closes its stream this many times before answering (needs resumable). */
  cuts?: number;
}

/** Events in order, replayed per stream after an id (what the SDK's example store does, per stream). */
class MemoryEventStore implements EventStore {
  private readonly events: { id: string; stream: string; message: unknown }[] = [];
  async storeEvent(stream: string, message: unknown): Promise<string> {
    const id = `${stream}_${this.events.length}`;
    this.events.push({ id, stream, message });
    return id;
  }
  async getStreamIdForEventId(id: string): Promise<string | undefined> {
    return this.events.find((e) => e.id === id)?.stream;
  }
  async replayEventsAfter(last: string, { send }: { send: (id: string, message: any) => Promise<void> }): Promise<string> {
    const at = this.events.findIndex((e) => e.id === last);
    if (at < 0) throw new Error('unknown event id');
    const stream = this.events[at].stream;
    for (const e of this.events.slice(at + 1)) if (e.stream === stream && Object.keys(e.message as object).length > 0) await send(e.id, e.message);
    return stream;
  }
}

export async function startRecordingServer(o: RecordingOptions = {}): Promise<RecordingServer> {
  const seen: RecordingServer['seen'] = [];
  const writes: string[] = [];
  const sessions = new Map<string, StreamableHTTPServerTransport>();
  const newSession = async (): Promise<StreamableHTTPServerTransport> => {
    const mcp = new McpServer({ name: 'recording-http', version: '1.0.0' });
    mcp.registerTool('echo', { description: 'echo', inputSchema: { message: z.string() }, annotations: { readOnlyHint: true } }, async ({ message }) => ({
      content: [{ type: 'text', text: `Echo: ${message}` }],
    }));
    mcp.registerTool('slow_write', { description: 'stores a note, slowly', inputSchema: { note: z.string() }, annotations: { readOnlyHint: false } }, async ({ note }, extra) => {
      for (let i = 0; i < (o.cuts ?? 0); i++) {
        await new Promise((r) => setTimeout(r, 30));
        extra.closeSSEStream?.();
        await new Promise((r) => setTimeout(r, 150));
      }
      writes.push(note);
      return { content: [{ type: 'text', text: `stored ${note}` }] };
    });
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      ...(o.resumable ? { eventStore: new MemoryEventStore(), retryInterval: 50 } : {}),
      onsessioninitialized: (sid) => void sessions.set(sid, transport),
    });
    await mcp.connect(transport);
    return transport;
  };
  const server = createServer((req, res) => {
    seen.push({ method: req.method ?? '', headers: req.headers });
    if (o.authorization !== undefined && req.headers.authorization !== o.authorization) {
      res.writeHead(401, { 'WWW-Authenticate': 'Bearer' }).end();
      return;
    }
    const sid = req.headers['mcp-session-id'];
    void (async () => {
      const t = typeof sid === 'string' ? sessions.get(sid) : req.method === 'POST' ? await newSession() : undefined;
      if (!t) return void res.writeHead(typeof sid === 'string' ? 404 : 400).end();
      await t.handleRequest(req, res);
    })().catch(() => {
      if (!res.headersSent) res.writeHead(500).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    server,
    seen,
    writes,
    close: async () => {
      for (const t of sessions.values()) await t.close().catch(() => undefined);
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
