// The live-restriction control socket: a unix socket created with mode 0600 (owner only; the
// agent, in its container with no mounts, cannot reach it). One JSON line per update, one
// reply line each. Lines are bounded; a connection that sends an oversized line is closed and
// the update counts as invalid (admission closes), and so does a last line the connection ends
// without its newline: a truncated update is not one the operator can be said to have sent.
import net from 'node:net';
import { chmodSync, lstatSync, unlinkSync } from 'node:fs';
import type { ControlReply } from './restrictions.js';

const MAX_LINE = 64 * 1024;

export class ControlServer {
  private server: net.Server | null = null;
  /** The socket file this server made: close removes that one, never what else is at the path. */
  private made: { dev: number; ino: number } | null = null;
  private readonly sockets = new Set<net.Socket>();

  constructor(
    readonly path: string,
    private readonly onUpdate: (line: string) => Promise<ControlReply>,
  ) {}

  async listen(): Promise<void> {
    let exists = false;
    try {
      lstatSync(this.path);
      exists = true;
    } catch {
      /* absent: good */
    }
    if (exists) throw new Error(`control socket path already exists: ${this.path}`);
    // Half-open: a client that ends its side after its line still gets its reply.
    const server = net.createServer({ allowHalfOpen: true }, (s) => this.serve(s));
    // umask so the socket is never connectable by others, not even between bind and chmod.
    const old = process.umask(0o177);
    try {
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(this.path, () => resolve());
      });
    } finally {
      process.umask(old);
    }
    this.server = server;
    const st = lstatSync(this.path);
    this.made = { dev: st.dev, ino: st.ino };
    chmodSync(this.path, 0o600);
  }

  private serve(s: net.Socket): void {
    this.sockets.add(s);
    s.on('close', () => this.sockets.delete(s));
    s.on('error', () => undefined);
    let buf = '';
    let chain = Promise.resolve();
    let over = false; // an oversized line ended this connection: nothing after it counts
    s.setEncoding('utf8');
    s.on('data', (d: string) => {
      if (over) return;
      buf += d;
      if (buf.length > MAX_LINE && !buf.includes('\n')) {
        buf = '';
        over = true;
        chain = chain.then(async () => {
          await this.onUpdate('');
          s.end(JSON.stringify({ ok: false, closed: true }) + '\n');
        });
        return;
      }
      let nl;
      while ((nl = buf.indexOf('\n')) !== -1) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        chain = chain.then(async () => {
          const r = await this.onUpdate(line);
          if (!s.destroyed) s.write(JSON.stringify(r) + '\n');
        });
      }
    });
    s.on('end', () => {
      if (over) return;
      const truncated = buf !== '';
      buf = '';
      chain = chain.then(async () => {
        if (truncated) await this.onUpdate('');
        if (!s.destroyed) s.end(truncated ? JSON.stringify({ ok: false, closed: true }) + '\n' : '');
      });
    });
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    if (this.server) await new Promise<void>((r) => this.server!.close(() => r()));
    this.server = null;
    // A path that already existed (another session's socket, the operator's file) was never
    // ours: removing it cut that session off from its operator, or lost the file.
    try {
      const st = lstatSync(this.path);
      if (this.made && st.dev === this.made.dev && st.ino === this.made.ino) unlinkSync(this.path);
    } catch {
      /* already gone */
    }
    this.made = null;
  }
}

/** Client side: send one update, wait for its reply. */
export function sendControl(path: string, revision: number | string, tools: string[], timeoutMs = 30_000): Promise<ControlReply> {
  return new Promise((resolve, reject) => {
    const s = net.createConnection(path);
    let buf = '';
    const t = setTimeout(() => {
      s.destroy();
      reject(new Error('no reply from the control socket'));
    }, timeoutMs);
    s.setEncoding('utf8');
    s.on('connect', () => s.write(JSON.stringify({ revision, tools }) + '\n'));
    s.on('data', (d: string) => {
      buf += d;
      const nl = buf.indexOf('\n');
      if (nl === -1) return;
      clearTimeout(t);
      s.end();
      try {
        const r = JSON.parse(buf.slice(0, nl));
        resolve(r.ok === true && typeof revision === 'number' && r.revision === revision ? { ok: true, revision } : { ok: false, closed: true });
      } catch {
        resolve({ ok: false, closed: true });
      }
    });
    s.on('error', () => {
      clearTimeout(t);
      reject(new Error('cannot connect to the control socket'));
    });
  });
}
