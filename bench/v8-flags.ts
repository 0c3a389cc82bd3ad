// Imported first by scripts that run Cedar in their own process (breakdown): the same V8 flag
// the benchmarks give the gate process (see GATE_NODE_FLAGS in lib.ts), set before any JS →
// Wasm call is optimized. Without it, Node 20.20 aborts in V8's deoptimizer after a few
// thousand Cedar evaluations.
import v8 from 'node:v8';

const flags = (process.env.BENCH_GATE_NODE_FLAGS ?? '--no-turbo-inline-js-wasm-calls').split(' ').filter(Boolean);
for (const f of flags) v8.setFlagsFromString(f);
