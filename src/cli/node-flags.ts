// The Node options on the command lines cloakpipe writes for a gate (ADR 067). V8 sizes its
// young generation only when the process starts, so the gate cannot set this for itself: `wrap`
// puts them before main.js in each host entry it makes, and the benchmarks start the gate with
// them. A fixed 32 MB young generation (V8's own starts at 1 MB and grows to 16) scavenges a
// third as often; each pause is longer, and the calls that wait behind one fall out of the p99.
export const GATE_NODE_FLAGS: readonly string[] = Object.freeze(['--max-semi-space-size=32', '--min-semi-space-size=32']);
