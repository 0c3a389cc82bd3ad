// Limits a door's command line prints in its --help, in a module of their own: printing them must
// not load the gate (its Cedar engine, its store) that the relay module brings with it.

/** Requests in flight past which a door stops reading its host (backpressure). */
export const DEFAULT_MAX_IN_FLIGHT = 256;
/** How long a host request that is not a call waits for the server (mcp-proxy's --call-timeout default). */
export const DEFAULT_REQUEST_TIMEOUT_MS = 60_000;
