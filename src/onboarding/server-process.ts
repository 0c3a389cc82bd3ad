// The stdio server that wrap and manifest draft start to read its tools/list, as a Transport for
// the SDK's Client: spawned as a host spawns it (command, args, env, cwd; its stderr to ours),
// but in a process group of its own, so that giving up on it ends what it started too. With the
// SDK's transport, a server started through a shell (`sh -c "cd dir && server"`) that never
// answered left the shell's child holding the pipes once the shell was killed: the command had
// said it gave up on the server, and then waited for that child for ever.
import { spawn, type ChildProcess } from 'node:child_process';
import { ReadBuffer, serializeMessage } from '@modelcontextprotocol/sdk/shared/stdio.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';

/** How long the server has to exit after its stdin ends, and after SIGTERM. */
const GRACE_MS = 2000;

/** Process groups where the OS has them; on Windows a detached child gets a console of its own, and only the process is signalled, as the SDK does. */
const GROUP = process.platform !== 'win32';

/**
 * What a terminal sends its foreground group (Ctrl-C, Ctrl-\, hang-up), and a script's kill:
 * the server's own group no longer hears them, so they are passed on to it, then taken here as
 * they would have been.
 */
const PASSED_ON = ['SIGINT', 'SIGQUIT', 'SIGHUP', 'SIGTERM'] as const;

export interface ServerCommand {
  command: string;
  args: string[];
  env: Record<string, string>;
  cwd?: string;
}

export class ServerProcessTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  private child?: ChildProcess;
  /** Every pipe to the server's group is closed (its 'close' event). */
  private ended = false;
  private readonly buffer = new ReadBuffer();
  /** The server's group, for as long as its pipes are open. */
  private group?: number;
  private readonly passOn = (signal: NodeJS.Signals) => {
    this.unhook();
    try {
      if (this.group !== undefined) process.kill(-this.group, signal);
    } catch {
      // the group is gone already
    }
    process.kill(process.pid, signal);
  };
  private readonly unhook = () => {
    for (const s of PASSED_ON) process.off(s, this.passOn);
  };

  constructor(private readonly server: ServerCommand) {}

  start(): Promise<void> {
    return new Promise((resolve, reject) => {
      const child = spawn(this.server.command, this.server.args, { env: this.server.env, cwd: this.server.cwd, stdio: ['pipe', 'pipe', 'inherit'], detached: GROUP, windowsHide: true });
      this.child = child;
      child.once('error', (e) => (reject(e), this.onerror?.(e)));
      child.once('spawn', () => resolve());
      child.once('close', () => ((this.ended = true), this.unhook(), this.onclose?.()));
      if (GROUP && child.pid !== undefined) {
        this.group = child.pid;
        for (const s of PASSED_ON) process.once(s, this.passOn);
      }
      child.stdin!.on('error', (e) => this.onerror?.(e));
      child.stdout!.on('error', (e) => this.onerror?.(e));
      child.stdout!.on('data', (chunk: Buffer) => {
        try {
          this.buffer.append(chunk);
        } catch (e) {
          // A line past the SDK's bound (10 MiB): the server is given up on, as the SDK's transport does.
          this.onerror?.(e as Error);
          void this.close();
          return;
        }
        for (;;) {
          let message: JSONRPCMessage | null;
          try {
            message = this.buffer.readMessage();
          } catch (e) {
            this.onerror?.(e as Error); // that line is consumed; the next may be fine
            continue;
          }
          if (message === null) break;
          this.onmessage?.(message);
        }
      });
    });
  }

  send(message: JSONRPCMessage): Promise<void> {
    const stdin = this.child?.stdin;
    if (!stdin || this.ended) return Promise.reject(new Error('the server is not running'));
    return new Promise((resolve) => (stdin.write(serializeMessage(message)) ? resolve() : stdin.once('drain', () => resolve())));
  }

  /** Its stdin ended; then SIGTERM, then SIGKILL to its whole group, each after a grace, until every pipe is closed. */
  async close(): Promise<void> {
    const child = this.child;
    if (!child) return;
    this.child = undefined;
    const closed = new Promise<void>((resolve) => (this.ended ? resolve() : child.once('close', () => resolve())));
    const within = (ms: number) => Promise.race([closed, new Promise<void>((resolve) => setTimeout(resolve, ms).unref())]);
    child.stdin?.end();
    await within(GRACE_MS);
    for (const signal of ['SIGTERM', 'SIGKILL'] as const) {
      if (this.ended || child.pid === undefined) break;
      try {
        if (GROUP) process.kill(-child.pid, signal);
        else child.kill(signal);
      } catch {
        // the group is gone already
      }
      await within(GRACE_MS);
    }
    // Whatever still holds a pipe (a process that left the group) no longer holds this process.
    this.unhook();
    child.stdout?.destroy();
    this.buffer.clear();
  }
}
