// The error responses the gate writes itself (product.md section 1).
import { jsonRpcCode } from '../core/refusal.js';
import type { RefusalData } from '../core/outcome.js';
import type { RpcId } from '../wire/jsonrpc.js';
import type { JsonObject } from '../core/json.js';

export function refusalResponse(id: RpcId | null, data: RefusalData): JsonObject {
  return {
    jsonrpc: '2.0',
    id,
    // Hosts show the message and drop data: the one-line detail goes in both (never a value).
    error: { code: jsonRpcCode(data.reason), message: `cloakpipe refused: ${data.reason}: ${data.detail}`, data: { ...data } as unknown as JsonObject },
  };
}

/** The call was forwarded and its outcome is unknown: the host must not assume either way. */
export function unknownOutcomeResponse(id: RpcId, why: string, entry: number, fingerprint: string): JsonObject {
  return {
    jsonrpc: '2.0',
    id,
    error: {
      code: -32003,
      message: `cloakpipe: outcome unknown (${why})`,
      data: { reason: 'outcome_unknown', detail: `the call was forwarded and its outcome is unknown (${why}); reconcile before retrying`, entry, fingerprint },
    },
  };
}

export function upstreamGoneResponse(id: RpcId): JsonObject {
  return { jsonrpc: '2.0', id, error: { code: -32603, message: 'cloakpipe: the upstream server exited before answering' } };
}

/** Allowed, but never forwarded (the gate is stopping or the upstream went first): nothing ran. */
export function notForwardedResponse(id: RpcId, entry: number): JsonObject {
  return { jsonrpc: '2.0', id, error: { code: -32603, message: 'cloakpipe: the call was not forwarded (the session is ending); it did not run', data: { reason: 'not_forwarded', entry } } };
}

/** A request the upstream will never answer (its HTTP exchange failed or was unreadable). */
export function upstreamSilentResponse(id: RpcId): JsonObject {
  return { jsonrpc: '2.0', id, error: { code: -32603, message: 'cloakpipe: the upstream server did not answer within --call-timeout' } };
}

export function upstreamLostResponse(id: RpcId): JsonObject {
  return { jsonrpc: '2.0', id, error: { code: -32603, message: 'cloakpipe: the upstream server gave no readable answer' } };
}
