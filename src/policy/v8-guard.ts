// Node 20's V8 aborts the process ("unreachable code" in the deoptimizer) after a few thousand
// Cedar evaluations when TurboFan inlines JS → Wasm calls and later deoptimizes them. A gate
// that crashes mid-session is a gate that gets switched off: turn that inlining off before any
// Cedar call is optimized. This module is imported before the Cedar package everywhere.
import v8 from 'node:v8';

v8.setFlagsFromString('--no-turbo-inline-js-wasm-calls');
