// Profile target: the in-process gate at 64 calls in flight (an upstream that answers at once),
// for `node --cpu-prof dist/bench/profile-gate.js [--n 5000]`. Prints CPU µs per call.
import { openGate } from '../src/gate/open.js';
import { setLogSink } from '../src/telemetry/log.js';
import { flags, gateFiles, isMain } from './lib.js';

export async function main() {
  const f = flags({ inflight: { type: 'string' } }, { n: 5000 });
  const inFlight = Number(f.values.inflight ?? 64);
  setLogSink(() => undefined);
  const files = gateFiles();
  const opened = await openGate({ home: files.home, manifestPath: files.manifest, policyPath: files.policy, contextPath: files.context, mode: 'enforce', approverKeys: [], callTimeoutMs: 60_000 });
  const forward = () => Promise.resolve({ result: { content: [{ type: 'text', text: 'ok' }] } });
  const args = { message: 'hello from the benchmark' };
  let started = 0;
  const c0 = process.cpuUsage();
  const t = performance.now();
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (started < f.n) {
        started++;
        await opened.gate.handleCall({ tool: 'echo', arguments: args, meta: {} }, forward);
      }
    }),
  );
  const c = process.cpuUsage(c0);
  process.stdout.write(`${f.n} calls, ${inFlight} in flight: ${Math.round(f.n / ((performance.now() - t) / 1000))} calls/s, CPU ${((c.user + c.system) / f.n).toFixed(0)} µs/call\n`);
  await opened.close('bench'); // reports the last calls' decisions, into the silent sink
  setLogSink(null);
}

if (isMain(import.meta.url)) await main();
