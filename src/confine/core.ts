// The bridge's decision loop, independent of Docker: agent stdout bytes in, one reply line per
// request out, every bound enforced, control updates ordered with the calls. Requests are
// handled one at a time in arrival order, so "calls admitted before an update finish before it
// is acknowledged; calls queued behind it see it" is a property of the queue itself. Every
// frame goes to the gate: a request, whatever it names, to its decision; a frame that stops
// the session (malformed, extra keys, too large) to its wire refusal. Each is a ledger entry.
import type { JsonObject, JsonValue } from '../core/json.js';
import { BoundedLines, MAX_FRAME_BYTES, MAX_STREAM_BYTES, StopError, parseFrame, type StopReason } from './frames.js';
import type { BridgeOutcome, ConfineGate } from './gate-port.js';
import type { ControlReply } from './restrictions.js';
import { toolOf } from './aliases.js';

export interface CoreOptions {
  /** operation name → manifest tool */
  aliases: ReadonlyMap<string, string>;
  /** Frames that stop the session and control updates are recorded here. */
  gate: ConfineGate;
  /** One call through the relay: decided by the gate, forwarded only when allowed (confine/upstream.ts). */
  call: (tool: string, args: JsonObject) => Promise<BridgeOutcome>;
  maxCalls: number;
  writeToAgent: (line: string) => void;
  onStop: (reason: StopReason) => void;
  maxFrame?: number;
  maxStdout?: number;
  maxStderr?: number;
}

export class BridgeCore {
  allowed = 0;
  denied = 0;
  calls = 0;
  stderrBytes = 0;
  stopped: StopReason | null = null;
  private readonly stdout: BoundedLines;
  private readonly maxStderr: number;
  private queue: Promise<void> = Promise.resolve();

  constructor(private readonly o: CoreOptions) {
    this.stdout = new BoundedLines(o.maxFrame ?? MAX_FRAME_BYTES, o.maxStdout ?? MAX_STREAM_BYTES, 'stdout_limit');
    this.maxStderr = o.maxStderr ?? MAX_STREAM_BYTES;
  }

  get stdoutBytes(): number {
    return this.stdout.total;
  }

  stop(reason: StopReason): void {
    if (this.stopped) return;
    this.stopped = reason;
    this.o.onStop(reason);
  }

  /** Stderr is drained and counted, never kept. */
  pushStderr(chunk: Buffer): void {
    this.stderrBytes += chunk.length;
    if (this.stderrBytes > this.maxStderr) this.stop('stderr_limit');
  }

  pushStdout(chunk: Buffer): void {
    if (this.stopped) return;
    try {
      for (const line of this.stdout.push(chunk)) {
        const frame = parseFrame(line);
        this.calls += 1;
        if (this.calls > this.o.maxCalls) throw new StopError('max_calls');
        this.enqueue(() => this.handle(frame.operation, frame.arguments));
      }
    } catch (e) {
      this.stop(e instanceof StopError ? e.reason : 'internal_error');
      // The frame that stopped the session is the gate's refusal too: recorded after the calls
      // read before it, with its wire code and the line's digest.
      const frame = e instanceof StopError ? e.frame : undefined;
      if (frame) this.enqueue(() => this.o.gate.refuseFrame(frame.code, frame.line), true);
    }
  }

  /** The agent's stdout ended: a partial last line is a malformed frame. */
  endStdout(): void {
    if (this.stopped || this.stdout.pending === 0) return;
    this.stop('malformed_frame');
    const line = this.stdout.rest();
    this.enqueue(() => this.o.gate.refuseFrame('malformed_json', line), true);
  }

  /** A control update, ordered with the calls. */
  control(line: string): Promise<ControlReply> {
    return new Promise((resolve) => {
      this.enqueue(async () => {
        let reply: ControlReply = { ok: false, closed: true };
        try {
          reply = await this.o.gate.control(line);
        } finally {
          resolve(reply);
        }
      }, true);
    });
  }

  /** Resolves when everything queued so far has been handled. */
  idle(): Promise<void> {
    return this.queue;
  }

  private enqueue(job: () => Promise<void>, evenWhenStopped = false): void {
    this.queue = this.queue.then(async () => {
      if (this.stopped && !evenWhenStopped) return;
      try {
        await job();
      } catch {
        this.stop('internal_error');
      }
    });
  }

  private async handle(operation: string, args: JsonObject): Promise<void> {
    const tool = toolOf(this.o.aliases, operation);
    let out: BridgeOutcome;
    try {
      out = await this.o.call(tool, args);
    } catch {
      out = { kind: 'gateway_error' };
    }
    if (this.stopped) return; // the session ended while this call was out: no reply
    if (out.kind === 'gateway_error') return this.stop('gateway_error');
    if (out.kind === 'refused') return this.reply(false, { reason: out.reason });
    return this.reply(true, out.result);
  }

  private reply(allowed: boolean, result: JsonValue): void {
    if (this.stopped) return;
    if (allowed) this.allowed += 1;
    else this.denied += 1;
    this.o.writeToAgent(JSON.stringify({ allowed, result }) + '\n');
  }
}
