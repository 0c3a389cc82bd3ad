// The signing thread (ADR 042): seals each run the ledger streams to it, body by body as they
// are appended, with the key lent for that run (the ledger's sealing, this folder's signing).
// Started by the ledger's sealer at the URL the composition root gives it (home/open.ts).
import { parentPort } from 'node:worker_threads';
import type { ThreadKey } from '../core/signer.js';
import { threadSigner } from './thread-sign.js';
import { sealRun, type Sealed } from '../ledger/seal.js';
import type { EntryBody } from '../ledger/entry.js';

interface Run {
  first: string;
  sign: (m: Buffer) => Buffer;
  sealed: Sealed[];
  error: string | null;
}

const runs = new Map<number, Run>();

function codeOf(e: unknown): string {
  const code = /CKR_[A-Z0-9_]+/.exec(String((e as Error)?.message ?? ''));
  return code ? code[0] : ((e as Error)?.name ?? 'error');
}

type Message = { t: 'begin'; id: number; prev: string; key: ThreadKey } | { t: 'push'; id: number; bodies: EntryBody[] } | { t: 'cut'; id: number; n: number } | { t: 'end'; id: number };

parentPort!.on('message', (m: Message) => {
  if (m.t === 'begin') {
    let sign: Run['sign'] = () => Buffer.alloc(0);
    let error: string | null = null;
    try {
      sign = threadSigner(m.key);
    } catch (e) {
      error = codeOf(e);
    }
    runs.set(m.id, { first: m.prev, sign, sealed: [], error });
    return;
  }
  const run = runs.get(m.id);
  if (!run) return;
  if (m.t === 'push') {
    if (run.error !== null) return;
    const prev = run.sealed.length > 0 ? run.sealed[run.sealed.length - 1].hash : run.first;
    try {
      for (const s of sealRun(prev, m.bodies, run.sign)) run.sealed.push(s);
    } catch (e) {
      run.error = codeOf(e);
    }
  } else if (m.t === 'cut') {
    run.sealed.length = Math.min(run.sealed.length, m.n); // the next push links to the last kept
  } else {
    runs.delete(m.id);
    parentPort!.postMessage(run.error === null ? { id: m.id, sealed: run.sealed } : { id: m.id, error: run.error });
  }
});
