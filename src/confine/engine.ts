// A small Docker Engine API client over the local unix socket, pinned to one API version.
// Guards against: a client library silently negotiating a different API (and with it different
// HostConfig defaults), and an attach stream whose frame headers (which the agent's output
// drives) make us buffer without bound. See docs/decisions/004-docker-engine-client.md.
import http from 'node:http';
import type { Duplex } from 'node:stream';

export const API_VERSION = 'v1.41';
export const DEFAULT_SOCKET = '/var/run/docker.sock';

/** An engine error carries our own fixed text and the HTTP status; never a response body. */
export class EngineError extends Error {
  constructor(
    readonly status: number,
    readonly op: string,
  ) {
    super(`docker engine: ${op} failed (HTTP ${status})`);
  }
}

export interface EngineOptions {
  socketPath?: string;
  /** Per-request timeout in ms (not applied to attach/wait streams). */
  timeoutMs?: number;
}

const MAX_JSON_BODY = 8 * 1024 * 1024;

export class Engine {
  readonly socketPath: string;
  private readonly timeoutMs: number;

  constructor(opts: EngineOptions = {}) {
    this.socketPath = opts.socketPath ?? process.env.CLOAKPIPE_DOCKER_SOCKET ?? DEFAULT_SOCKET;
    this.timeoutMs = opts.timeoutMs ?? 30_000;
  }

  private raw(method: string, path: string, body: unknown, op: string, timeoutMs: number | null): Promise<{ status: number; body: Buffer }> {
    return new Promise((resolve, reject) => {
      const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
      const req = http.request(
        {
          socketPath: this.socketPath,
          method,
          path: `/${API_VERSION}${path}`,
          headers: { Host: 'docker', ...(payload ? { 'Content-Type': 'application/json', 'Content-Length': payload.length } : {}) },
        },
        (res) => {
          const chunks: Buffer[] = [];
          let size = 0;
          res.on('data', (c: Buffer) => {
            size += c.length;
            if (size > MAX_JSON_BODY) {
              req.destroy();
              reject(new EngineError(0, `${op} (response too large)`));
              return;
            }
            chunks.push(c);
          });
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) }));
          res.on('error', () => reject(new EngineError(0, op)));
        },
      );
      if (timeoutMs !== null) req.setTimeout(timeoutMs, () => req.destroy(new Error('timeout')));
      req.on('error', () => reject(new EngineError(0, op)));
      req.end(payload);
    });
  }

  private async json<T>(method: string, path: string, body: unknown, op: string, ok: number[], timeoutMs: number | null = this.timeoutMs): Promise<T> {
    const r = await this.raw(method, path, body, op, timeoutMs);
    if (!ok.includes(r.status)) throw new EngineError(r.status, op);
    if (r.body.length === 0) return undefined as T;
    try {
      return JSON.parse(r.body.toString('utf8')) as T;
    } catch {
      throw new EngineError(r.status, `${op} (unreadable response)`);
    }
  }

  version(): Promise<DockerVersion> {
    return this.json('GET', '/version', undefined, 'version', [200]);
  }

  info(): Promise<DockerInfo> {
    return this.json('GET', '/info', undefined, 'info', [200]);
  }

  imageInspect(id: string): Promise<Record<string, any>> {
    return this.json('GET', `/images/${encodeURIComponent(id)}/json`, undefined, 'image inspect', [200]);
  }

  networkInspect(name: string): Promise<Record<string, any>> {
    return this.json('GET', `/networks/${encodeURIComponent(name)}`, undefined, 'network inspect', [200]);
  }

  async create(body: object, name?: string): Promise<string> {
    const q = name ? `?name=${encodeURIComponent(name)}` : '';
    const r = await this.json<{ Id: string }>('POST', `/containers/create${q}`, body, 'create', [201]);
    return r.Id;
  }

  inspect(id: string): Promise<ContainerInspect> {
    return this.json('GET', `/containers/${encodeURIComponent(id)}/json`, undefined, 'inspect', [200]);
  }

  /** inspect, or null when the container does not exist (any more). */
  async inspectOrNull(id: string): Promise<ContainerInspect | null> {
    try {
      return await this.inspect(id);
    } catch (e) {
      if (e instanceof EngineError && e.status === 404) return null;
      throw e;
    }
  }

  async start(id: string): Promise<void> {
    await this.json('POST', `/containers/${encodeURIComponent(id)}/start`, undefined, 'start', [204, 304]);
  }

  async restart(id: string): Promise<void> {
    await this.json('POST', `/containers/${encodeURIComponent(id)}/restart?t=0`, undefined, 'restart', [204]);
  }

  async pause(id: string): Promise<void> {
    await this.json('POST', `/containers/${encodeURIComponent(id)}/pause`, undefined, 'pause', [204]);
  }

  /** SIGKILL. A container that is not running (409) or gone (404) is fine. */
  async kill(id: string): Promise<void> {
    await this.json('POST', `/containers/${encodeURIComponent(id)}/kill?signal=SIGKILL`, undefined, 'kill', [204, 404, 409]);
  }

  /** Forced removal with anonymous volumes; a container already gone (404) is fine. */
  async remove(id: string): Promise<void> {
    await this.json('DELETE', `/containers/${encodeURIComponent(id)}?force=1&v=1`, undefined, 'remove', [204, 404, 409]);
  }

  /** Waits until the container is not running; resolves with its exit code. */
  async wait(id: string): Promise<number> {
    const r = await this.json<{ StatusCode: number }>('POST', `/containers/${encodeURIComponent(id)}/wait?condition=not-running`, undefined, 'wait', [200], null);
    return r.StatusCode;
  }

  /** Logs as raw bytes (multiplexed), or null when the log driver does not support reading. */
  async logs(id: string): Promise<Buffer | null> {
    const r = await this.raw('GET', `/containers/${encodeURIComponent(id)}/logs?stdout=1&stderr=1`, undefined, 'logs', this.timeoutMs);
    if (r.status === 200) return r.body;
    if (r.status === 501 || r.status === 400 || r.status === 500) return null;
    throw new EngineError(r.status, 'logs');
  }

  /** GET archive: a tar of `path` inside the container, or null if the path does not exist. */
  async archive(id: string, path: string): Promise<Buffer | null> {
    const r = await this.raw('GET', `/containers/${encodeURIComponent(id)}/archive?path=${encodeURIComponent(path)}`, undefined, 'archive', this.timeoutMs);
    if (r.status === 200) return r.body;
    if (r.status === 404) return null;
    throw new EngineError(r.status, 'archive');
  }

  /**
   * Attach stdin/stdout/stderr over a hijacked connection (HTTP 101). The returned socket
   * carries raw stdin one way and the multiplexed stdout/stderr stream the other; feed it to a
   * Demuxer. Attach before start so no output is missed.
   */
  attach(id: string): Promise<Duplex> {
    return new Promise((resolve, reject) => {
      const req = http.request({
        socketPath: this.socketPath,
        method: 'POST',
        path: `/${API_VERSION}/containers/${encodeURIComponent(id)}/attach?stream=1&stdin=1&stdout=1&stderr=1`,
        headers: { Host: 'docker', Connection: 'Upgrade', Upgrade: 'tcp' },
      });
      req.on('upgrade', (_res, socket, head) => {
        if (head.length) socket.unshift(head);
        resolve(socket);
      });
      req.on('response', (res) => {
        res.resume();
        reject(new EngineError(res.statusCode ?? 0, 'attach'));
      });
      req.on('error', () => reject(new EngineError(0, 'attach')));
      req.end();
    });
  }
}

/** Can we reach an engine at all? (For tests that skip without one.) */
export async function engineReachable(engine = new Engine({ timeoutMs: 3000 })): Promise<boolean> {
  try {
    await engine.version();
    return true;
  } catch {
    return false;
  }
}

export interface DockerVersion {
  Version: string;
  ApiVersion: string;
  KernelVersion?: string;
  Os?: string;
  [k: string]: unknown;
}

export interface DockerInfo {
  OperatingSystem?: string;
  OSType?: string;
  KernelVersion?: string;
  Name?: string;
  [k: string]: unknown;
}

export type ContainerInspect = Record<string, any>;

export type StreamKind = 'stdout' | 'stderr';

/**
 * Demultiplexes Docker's attach/log stream: 8-byte headers [kind, 0, 0, 0, size(u32 BE)] then
 * `size` bytes. Payload bytes are passed on as they arrive, never accumulated per frame, so a
 * header claiming a huge size costs nothing; `maxFrame` still rejects absurd headers outright.
 * A stream kind other than stdout/stderr is a protocol error.
 */
export class Demuxer {
  private header = Buffer.alloc(8);
  private headerFill = 0;
  private remaining = 0;
  private kind: StreamKind = 'stdout';
  private failed = false;

  constructor(
    private readonly onData: (kind: StreamKind, chunk: Buffer) => void,
    private readonly onError: (reason: string) => void,
    private readonly maxFrame = 16 * 1024 * 1024,
  ) {}

  push(chunk: Buffer): void {
    let off = 0;
    while (off < chunk.length && !this.failed) {
      if (this.remaining === 0) {
        const take = Math.min(8 - this.headerFill, chunk.length - off);
        chunk.copy(this.header, this.headerFill, off, off + take);
        this.headerFill += take;
        off += take;
        if (this.headerFill < 8) return;
        this.headerFill = 0;
        const k = this.header[0];
        const size = this.header.readUInt32BE(4);
        if ((k !== 1 && k !== 2) || this.header[1] !== 0 || this.header[2] !== 0 || this.header[3] !== 0) {
          this.fail('invalid stream header');
          return;
        }
        if (size > this.maxFrame) {
          this.fail('stream frame too large');
          return;
        }
        this.kind = k === 1 ? 'stdout' : 'stderr';
        this.remaining = size;
        continue;
      }
      const take = Math.min(this.remaining, chunk.length - off);
      this.remaining -= take;
      const part = chunk.subarray(off, off + take);
      off += take;
      this.onData(this.kind, part);
    }
  }

  private fail(reason: string): void {
    this.failed = true;
    this.onError(reason);
  }
}

/** Demultiplex a complete buffer (logs) into per-stream buffers, bounded by `limit` bytes each. */
export function demuxAll(buf: Buffer, limit = 4 * 1024 * 1024): { stdout: Buffer; stderr: Buffer } {
  const out: Record<StreamKind, Buffer[]> = { stdout: [], stderr: [] };
  const sizes: Record<StreamKind, number> = { stdout: 0, stderr: 0 };
  new Demuxer(
    (k, c) => {
      if (sizes[k] + c.length <= limit) {
        out[k].push(Buffer.from(c));
        sizes[k] += c.length;
      }
    },
    () => {},
  ).push(buf);
  return { stdout: Buffer.concat(out.stdout), stderr: Buffer.concat(out.stderr) };
}
