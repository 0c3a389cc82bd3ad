// An HTTP request body read up to a bound, for the servers (MCP HTTP door, LLM door, inbox).
import type { IncomingMessage } from 'node:http';

/**
 * The body, or null once it passes `max` bytes: the rest is not kept, and the request is then
 * paused, drained (resume) or dropped (destroy), as the server wants.
 */
export function readBodyUpTo(req: IncomingMessage, max: number, past: 'pause' | 'resume' | 'destroy'): Promise<Buffer | null> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > max) {
        req.removeAllListeners('data');
        req[past]();
        resolve(null);
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => resolve(size > max ? null : Buffer.concat(chunks)));
    req.on('error', reject);
  });
}
