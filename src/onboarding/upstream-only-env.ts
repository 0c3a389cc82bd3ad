// An entry's env is set by the host on the process it starts: once wrapped, the gate's. Some
// variables make that process load code or trust otherwise before cloakpipe runs a line
// (NODE_OPTIONS=--require ./evil.js, NODE_PATH, LD_PRELOAD, an OPENSSL_CONF naming an engine,
// NODE_TLS_REJECT_UNAUTHORIZED=0). The server may need them; the gate must not take them. Wrap
// renames each to UPSTREAM_ONLY + NAME, which no loader reads, and the gate gives it back under
// its own name to the server it starts, alone (ADR 112).

/** The prefix a wrapped entry's upstream-only variables carry (CLOAKPIPE_*: never passed on as is). */
export const UPSTREAM_ONLY = 'CLOAKPIPE_UPSTREAM_ENV_';

/** A variable Node, the dynamic loader or OpenSSL reads at start (NODE_ENV is read by programs only). */
export function loadsIntoGate(name: string): boolean {
  const n = name.toUpperCase();
  if (n === 'NODE_ENV') return false;
  return /^(NODE_|LD_|DYLD_|OPENSSL_)/.test(n);
}

/** The environment for the gate's upstream: each UPSTREAM_ONLY + NAME given back as NAME. */
export function withUpstreamOnly(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = { ...env };
  for (const [k, v] of Object.entries(env)) if (k.startsWith(UPSTREAM_ONLY) && k.length > UPSTREAM_ONLY.length) out[k.slice(UPSTREAM_ONLY.length)] = v;
  return out;
}
