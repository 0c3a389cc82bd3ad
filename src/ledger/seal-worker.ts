// The signing thread of a key file (ADR 042): seals the runs the ledger sends, in order.
import { sign, type KeyObject } from 'node:crypto';
import { parentPort, workerData } from 'node:worker_threads';
import { sealRun } from './seal.js';
import type { EntryBody } from './entry.js';

const key = (workerData as { key: KeyObject }).key;

parentPort!.on('message', (m: { id: number; prev: string; bodies: EntryBody[] }) => {
  try {
    parentPort!.postMessage({ id: m.id, sealed: sealRun(m.prev, m.bodies, (bytes) => sign(null, bytes, key)) });
  } catch (e) {
    parentPort!.postMessage({ id: m.id, error: (e as Error).name });
  }
});
