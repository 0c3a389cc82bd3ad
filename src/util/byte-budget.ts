// Bytes that request bodies may hold at once across a server, shared oldest first: a body waits
// unread (its bytes in its socket) until its bytes fit, and leaves the queue when its client
// hangs up. The HTTP door's bodies without a session (ADR 092) and the LLM door's large requests.

/** What a request waits on: it leaves the queue when its client hangs up. */
interface Closable {
  once(event: 'close', f: () => void): unknown;
}

export class ByteBudget {
  private used = 0;
  private readonly queue: { bytes: number; go: () => void }[] = [];

  constructor(readonly limit: number) {}

  /** Resolves true once `bytes` (at most `limit`) are held for it, oldest first; false if the client left first. */
  take(bytes: number, req: Closable): Promise<boolean> {
    if (this.queue.length === 0 && this.used + bytes <= this.limit) {
      this.used += bytes;
      return Promise.resolve(true);
    }
    return new Promise<boolean>((resolve) => {
      const w = {
        bytes,
        go: () => {
          this.used += bytes;
          resolve(true);
        },
      };
      this.queue.push(w);
      req.once('close', () => {
        const i = this.queue.indexOf(w);
        if (i < 0) return;
        this.queue.splice(i, 1);
        resolve(false);
        this.next(); // the one behind it may fit
      });
    });
  }

  release(bytes: number): void {
    this.used -= bytes;
    this.next();
  }

  private next(): void {
    while (this.queue.length > 0 && this.used + this.queue[0].bytes <= this.limit) this.queue.shift()!.go();
  }
}
