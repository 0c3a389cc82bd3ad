// A signature-checking worker: receives batches of entry lines, answers with their checks.
import { createPublicKey } from 'node:crypto';
import { parentPort, workerData } from 'node:worker_threads';
import { checkEntryLine } from './check-entry.js';

const { publicKeyPem, withEntries } = workerData as { publicKeyPem: string; withEntries: boolean };
const key = createPublicKey(publicKeyPem);
parentPort!.on('message', (m: { id: number; lines: string[] }) => {
  parentPort!.postMessage({ id: m.id, results: m.lines.map((l) => checkEntryLine(l, key, withEntries)) });
});
