// Limits a door's command line prints in its --help, in a module of their own: printing them must
// not load the gate (its Cedar engine, its store) that the relay module brings with it.

/** Requests in flight past which a door stops reading its host (backpressure). */
export const DEFAULT_MAX_IN_FLIGHT = 256;
