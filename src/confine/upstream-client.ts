// The upstream MCP server of a confined session, through the official SDK client. The bridge
// hands the gate a `forward` built on `call`; when the server is gone, `call` rejects with
// UpstreamGone so the gate records the outcome as unknown and the bridge stops the session.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import type { JsonObject, JsonValue } from '../core/json.js';
import { UpstreamGone } from '../gate/gate.js';
import type { UpstreamReply } from './gate-port.js';

export class McpUpstream {
  private gone = false;
  private readonly goneHandlers: (() => void)[] = [];

  private constructor(
    private readonly client: Client,
    private readonly transport: StdioClientTransport,
    private readonly callTimeoutMs: number,
  ) {
    transport.onclose = () => this.markGone();
  }

  static async connect(command: string, args: string[], opts: { env?: Record<string, string>; callTimeoutMs: number }): Promise<McpUpstream> {
    // The host-given environment minus the gate's own (product.md 7a): CLOAKPIPE_* is not the
    // server's to read (the home, the Docker socket the watchdog uses).
    const env: Record<string, string> = {};
    for (const [k, v] of Object.entries(opts.env ?? process.env)) if (v !== undefined && !k.startsWith('CLOAKPIPE_')) env[k] = v;
    // The upstream's stderr is not ours to echo: it may repeat the agent's arguments.
    const transport = new StdioClientTransport({ command, args, env, stderr: 'ignore' });
    const client = new Client({ name: 'cloakpipe-confine', version: '0.1.0' }, { capabilities: {} });
    const up = new McpUpstream(client, transport, opts.callTimeoutMs);
    await client.connect(transport);
    const prevClose = transport.onclose;
    transport.onclose = () => {
      prevClose?.();
      up.markGone();
    };
    return up;
  }

  get pid(): number | null {
    return this.transport.pid;
  }

  private markGone(): void {
    if (this.gone) return;
    this.gone = true;
    for (const h of this.goneHandlers) h();
  }

  onGone(h: () => void): void {
    if (this.gone) h();
    else this.goneHandlers.push(h);
  }

  get isGone(): boolean {
    return this.gone;
  }

  async call(tool: string, args: JsonObject): Promise<UpstreamReply> {
    if (this.gone) throw new UpstreamGone();
    try {
      const r = await this.client.callTool({ name: tool, arguments: args }, undefined, { timeout: this.callTimeoutMs });
      return { result: r as unknown as JsonValue };
    } catch (e) {
      if (this.gone) throw new UpstreamGone();
      // -32000 connection closed, -32001 request timeout: no answer, the outcome is unknown.
      if (e instanceof McpError && e.code !== -32000 && e.code !== -32001) return { error: { code: e.code, message: 'upstream error' } };
      throw e;
    }
  }

  async close(): Promise<void> {
    this.gone = true;
    await this.client.close().catch(() => undefined);
  }
}
