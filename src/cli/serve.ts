// What the HTTP doors' commands (http-proxy, llm-proxy) share: reading --listen and durations,
// and serving until SIGTERM/SIGINT, then draining and closing the gate.
import type { Server } from 'node:http';
import { timerDuration, UsageError } from './args.js';
import type { OpenedGate } from '../gate/open.js';
import { anchorTargets } from './ledger-anchor.js';

/** --anchor-interval and the anchor targets (--tsa, --tsa-root, --rekor, --rekor-key). */
export function anchoring(values: Record<string, unknown>) {
  const anchorIntervalMs = values['anchor-interval'] ? timerDuration(values['anchor-interval'] as string, '--anchor-interval') : undefined;
  const anchors = anchorTargets(values as { tsa?: string; 'tsa-root'?: string; rekor?: string; 'rekor-key'?: string });
  return { anchorIntervalMs, anchors };
}

/** --listen HOST:PORT ([v6]:PORT allowed); the host without brackets. */
export function parseListen(text: string): { host: string; port: number } {
  const listen = /^(\[[0-9a-fA-F:]+\]|[^:]+):([0-9]{1,5})$/.exec(text);
  if (!listen || Number(listen[2]) > 65535) throw new UsageError('--listen must be HOST:PORT');
  return { host: listen[1].replace(/^\[|\]$/g, ''), port: Number(listen[2]) };
}

/** HOST:PORT as a URL authority (an IPv6 host in brackets). */
export function authority(host: string, port: number): string {
  return `${host.includes(':') ? `[${host}]` : host}:${port}`;
}

interface Door {
  readonly server: Server;
  listen(port: number, host: string): Promise<void>;
  drain(graceMs: number): Promise<void>;
}

/**
 * Listens, says where (the one line a supervisor or test waits for), serves until SIGTERM or
 * SIGINT, lets requests in flight finish (10 s at most) and closes the gate. Exit 2 if it
 * cannot listen.
 */
export async function serveUntilSignal(
  door: Door,
  opened: OpenedGate,
  at: { listen: string; host: string; port: number },
  where: (port: number) => string,
  say: (m: string) => void,
): Promise<number> {
  try {
    await door.listen(at.port, at.host);
  } catch (e) {
    say(`cannot listen on ${at.listen}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
    await opened.close('ended');
    return 2;
  }
  const addr = door.server.address() as { port: number };
  say(`listening on ${where(addr.port)}`);
  await new Promise<void>((resolve) => {
    process.once('SIGTERM', resolve);
    process.once('SIGINT', resolve);
  });
  await door.drain(10_000);
  await opened.close('ended');
  return 0;
}
