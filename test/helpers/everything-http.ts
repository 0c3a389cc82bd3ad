// @modelcontextprotocol/server-everything in its Streamable HTTP mode on a free loopback port
// (the server takes its port from $PORT and prints it once it listens).
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { after } from 'node:test';
import { EVERYTHING } from './cli.js';

const running = new Set<ChildProcess>();
after(() => {
  for (const c of running) c.kill('SIGKILL');
});

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

export interface EverythingHttp {
  url: string;
  child: ChildProcess;
  stop(): Promise<void>;
}

export async function startEverythingHttp(): Promise<EverythingHttp> {
  for (let attempt = 0; ; attempt++) {
    const port = await freePort();
    const child = spawn(process.execPath, [EVERYTHING, 'streamableHttp'], { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, PORT: String(port) } });
    running.add(child);
    let err = '';
    const ok = await new Promise<boolean>((resolve) => {
      child.stderr!.on('data', (d: Buffer) => {
        err += d.toString();
        if (/listening on port/.test(err)) resolve(true);
      });
      child.once('exit', () => resolve(false));
    });
    if (ok) {
      child.stderr!.resume();
      return {
        url: `http://127.0.0.1:${port}/mcp`,
        child,
        stop: async () => {
          running.delete(child);
          if (child.exitCode !== null || child.signalCode !== null) return;
          const gone = new Promise<void>((r) => child.once('exit', () => r()));
          child.kill('SIGKILL');
          await gone;
        },
      };
    }
    running.delete(child);
    if (attempt >= 3) throw new Error(`server-everything streamableHttp did not start: ${err}`);
  }
}
