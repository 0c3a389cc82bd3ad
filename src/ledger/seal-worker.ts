// The signing thread (ADR 042): seals the runs the ledger sends, in order, with the key lent for
// each run. A thread's entry point, like a command's: it composes the ledger's sealing with the
// key's signing.
import { parentPort } from 'node:worker_threads';
import type { ThreadKey } from '../core/signer.js';
import { threadSigner } from '../keys/thread-sign.js';
import { sealRun } from './seal.js';
import type { EntryBody } from './entry.js';

parentPort!.on('message', (m: { id: number; prev: string; bodies: EntryBody[]; key: ThreadKey }) => {
  try {
    parentPort!.postMessage({ id: m.id, sealed: sealRun(m.prev, m.bodies, threadSigner(m.key)) });
  } catch (e) {
    const code = /CKR_[A-Z0-9_]+/.exec(String((e as Error)?.message ?? ''));
    parentPort!.postMessage({ id: m.id, error: code ? code[0] : (e as Error)?.name ?? 'error' });
  }
});
