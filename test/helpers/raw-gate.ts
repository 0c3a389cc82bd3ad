// The real gate binary (or a server straight, to compare) driven with raw lines, for wire-level
// tests a well-behaved SDK client would never send.
import { spawn, type ChildProcess } from 'node:child_process';
import { after } from 'node:test';
import { gateArgs, type GateOptions } from './gate.js';

// A failing test must not leave gates behind to keep the test process (and the run) alive.
const live = new Set<ChildProcess>();
after(() => {
  for (const c of live) c.kill('SIGKILL');
});

/**
 * How long a cold start may take to answer initialize, as startGate allows: the gate's start
 * needs about 1.5 s of CPU, and on the suite's two shared cores under a batch of test files
 * (load above 16 seen) its share of a core is small enough for that to pass 60 s.
 */
export const START_TIMEOUT_MS = 120_000;

/** A process spoken to in raw lines over its stdio: the gate, or a server straight. */
export class RawPeer {
  readonly child: ChildProcess;
  private buf = '';
  private lines: string[] = [];
  private waiters: ((l: string) => void)[] = [];
  stderr = '';
  readonly exited: Promise<number | null>;

  constructor(command: string[], env: Record<string, string> = {}) {
    this.child = spawn(command[0], command.slice(1), { stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, ...env } });
    this.child.stdout!.on('data', (d: Buffer) => {
      this.buf += d.toString('utf8');
      let i: number;
      while ((i = this.buf.indexOf('\n')) >= 0) {
        const line = this.buf.slice(0, i);
        this.buf = this.buf.slice(i + 1);
        const w = this.waiters.shift();
        if (w) w(line);
        else this.lines.push(line);
      }
    });
    this.child.stderr!.on('data', (d: Buffer) => (this.stderr += d.toString()));
    live.add(this.child);
    this.exited = new Promise((r) =>
      this.child.on('close', (code) => {
        live.delete(this.child);
        r(code);
      }),
    );
  }

  send(data: string | Buffer) {
    this.child.stdin!.write(data);
  }

  /** The next line the gate writes to the host, parsed. */
  async next(timeoutMs = 60_000): Promise<any> {
    return JSON.parse(await this.nextLine(timeoutMs));
  }

  /** The next line the gate writes to the host, as written (without the newline). */
  nextLine(timeoutMs = 60_000): Promise<string> {
    const l = this.lines.shift();
    if (l !== undefined) return Promise.resolve(l);
    return new Promise((resolve, reject) => {
      const waiter = (line: string) => {
        clearTimeout(t);
        resolve(line);
      };
      // A waiter that gave up leaves the queue: the line that comes later is the next wait's.
      const t = setTimeout(() => {
        this.waiters.splice(this.waiters.indexOf(waiter), 1);
        reject(new Error(`no line from the gate in ${timeoutMs} ms; its stderr ends:\n${this.stderr.slice(-2000)}`));
      }, timeoutMs);
      this.waiters.push(waiter);
    });
  }

  async initialize() {
    this.send(JSON.stringify({ jsonrpc: '2.0', id: 'init', method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } }) + '\n');
    const r = await this.next(START_TIMEOUT_MS);
    this.send(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) + '\n');
    // A ping round trip: everything sent so far has reached the server when it returns.
    this.send(JSON.stringify({ jsonrpc: '2.0', id: 'init-ping', method: 'ping' }) + '\n');
    await this.next();
    return r;
  }

  async end(): Promise<number | null> {
    this.child.stdin!.end();
    return this.exited;
  }
}

export class RawGate extends RawPeer {
  constructor(o: GateOptions) {
    super([process.execPath, ...gateArgs(o)], o.env);
  }
}
