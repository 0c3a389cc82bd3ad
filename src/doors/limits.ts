// Limits a door's command line prints in its --help, in a module of their own: printing them must
// not load the gate (its Cedar engine, its store) that the relay module brings with it.

/** Requests in flight past which a door stops reading its host (backpressure). */
export const DEFAULT_MAX_IN_FLIGHT = 256;
/** How long a host request that is not a call waits for the server (mcp-proxy's --call-timeout default). */
export const DEFAULT_REQUEST_TIMEOUT_MS = 60_000;
/**
 * HTTP door: client connections at once by default. Far more than 64 sessions of an SDK host need,
 * few enough that a flood of idle sockets (each closed after 10 s without headers, ADR 068) cannot
 * take the descriptors that the upstreams and the databases need under a common limit (ADR 085).
 */
export const DEFAULT_MAX_CONNECTIONS = 1024;

// The HTTP door's bytes for bodies that no session's admission bounds: initialize (no session
// yet) and POSTs refused for their headers (read for the ledger's digest, ADR 086). Each may be
// --max-body; without a bound across them, --max-connections such bodies were held at once.
// A body waits unread (its bytes in its socket) until its bytes fit (ADR 092).

/** The smallest budget: a few large bodies at once (raised to --max-body when that is larger). */
export const SESSIONLESS_BYTES = 32 * 1024 * 1024;
