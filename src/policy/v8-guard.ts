// V8 settings for Cedar's Wasm module, made before the Cedar package is loaded. This module is
// imported before it everywhere.
import v8 from 'node:v8';
import { availableParallelism } from 'node:os';

// Node 20's V8 aborts the process ("unreachable code" in the deoptimizer) after a few thousand
// Cedar evaluations when TurboFan inlines JS → Wasm calls and later deoptimizes them. A gate
// that crashes mid-session is a gate that gets switched off: turn that inlining off before any
// Cedar call is optimized.
v8.setFlagsFromString('--no-turbo-inline-js-wasm-calls');

// Compiling the 4.3 MB module on every V8 worker thread (four by default) leaves no core for
// the gate's own start or for the upstream it spawns: on 2 cores the first answer came 29 %
// sooner with one compilation task (1,116 → 791 ms p50, docs/performance.md). One core is left.
v8.setFlagsFromString(`--wasm-num-compilation-tasks=${Math.max(1, availableParallelism() - 1)}`);
