// One worker of the raw Ed25519 verify rate: verifies the given signed messages over and over
// for the given time with node:crypto, and reports how many it verified.
import { parentPort, workerData } from 'node:worker_threads';
import { createPublicKey, verify } from 'node:crypto';

const { publicPem, messages, signatures, durationMs } = workerData as { publicPem: string; messages: Uint8Array[]; signatures: Uint8Array[]; durationMs: number };
const key = createPublicKey(publicPem);
let count = 0;
let bad = 0;
const until = performance.now() + durationMs;
while (performance.now() < until) {
  for (let i = 0; i < messages.length; i++) if (!verify(null, messages[i], key, signatures[i])) bad++;
  count += messages.length;
}
parentPort!.postMessage({ count, bad, elapsedMs: durationMs + (performance.now() - until) });
