// The token thread: every PKCS#11 call the main thread makes on a module (initialise, log in,
// find, generate, sign, finalise) runs here, one at a time, so a token that hangs inside a call
// holds this thread, never the gate's (bounded-module.ts waits for it with a deadline).
import { workerData, type MessagePort } from 'node:worker_threads';
import { createRequire } from 'node:module';
import type * as Pkcs11 from 'pkcs11js';
import { revive } from './bounded-module.js';

const { port, state } = workerData as { port: MessagePort; state: SharedArrayBuffer };
const flag = new Int32Array(state);
const pkcs = createRequire(import.meta.url)('pkcs11js') as typeof Pkcs11;
const p = new pkcs.PKCS11() as unknown as Record<string, (...args: unknown[]) => unknown>;

port.on('message', (m: { id: number; fn: string; args: unknown[] }) => {
  let reply: { id: number; result?: unknown; error?: string };
  try {
    reply = { id: m.id, result: p[m.fn](...(revive(m.args) as unknown[])) };
  } catch (e) {
    // The binding's message names the CKR_ code; nothing the caller passed in (never the PIN).
    const code = /CKR_[A-Z0-9_]+/.exec(String((e as Error)?.message ?? ''));
    reply = { id: m.id, error: code ? code[0] : m.fn === 'load' ? 'cannot load' : ((e as Error)?.name ?? 'error') };
  }
  port.postMessage(reply);
  Atomics.store(flag, 0, m.id);
  Atomics.notify(flag, 0);
});
