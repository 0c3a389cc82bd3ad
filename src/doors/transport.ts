// One peer of the relay, seen as frames in and frames out (modelled on the MCP SDK's
// shared/transport.ts). A door's transport faces the host (stdio, HTTP, an LLM API); an upstream
// transport faces the tool server (a child process, an HTTP URL). Transports only frame bytes:
// parsing, matching and deciding are the relay's, so every door gets the same checks.
import type { RpcId } from '../wire/jsonrpc.js';
import type { Digest } from '../core/digest.js';

/**
 * What a transport hands the relay: the bytes of one message exactly as received (never
 * parsed here), or the notice that a message was larger than the transport accepts, with the
 * id a bounded-memory scan read from it (null when none could be read for sure).
 */
export type InboundFrame =
  /** `unterminated`: the peer's stream ended before this message's delimiter (a stdio line
   *  without its newline): it was not completely sent. */
  | { kind: 'frame'; bytes: Uint8Array; unterminated?: true }
  /** `digest`: of the whole message, hashed as it streamed by (it was never held). */
  | { kind: 'oversize'; id: RpcId | null; limit: number; digest: Digest };

/** How the peer went away: a process's exit status, or null when it has none (a closed stream). */
export interface TransportClosed {
  code: number | null;
  signal?: NodeJS.Signals | null;
  /** The peer could not be reached at all (an upstream that could not be started). */
  startError?: Error;
}

/** Why a request's exchange ended unanswered: a short code for the log, never a payload. */
export interface RequestLost {
  cause: string;
  gone: boolean;
  /** The bytes that could not be read, when there were some (logged by digest only). */
  bytes?: Uint8Array;
}

export interface Transport {
  /** Begin delivering frames; callbacks are installed before this is called. */
  start(): Promise<void>;
  /** Send one serialized JSON-RPC message (no framing: the transport adds its own). */
  send(message: string): void;
  /** Close the connection (stop the process); onclose follows once it is gone. */
  close(): Promise<void>;
  /** Stop delivering frames until resume() (backpressure); frames already read wait inside. */
  pause?(): void;
  resume?(): void;
  onframe?: (frame: InboundFrame) => void;
  /**
   * A message read while paused, offered before it waits: true when the relay acted on it at
   * once (a cancellation of a request in flight, an answer to the peer's request: neither must
   * wait behind the flood their request is part of); it is then not delivered again. Anything
   * else waits in order.
   */
  onurgent?: (bytes: Uint8Array) => boolean;
  /** The peer is gone: no more frames will arrive. Called once. */
  onclose?: (info: TransportClosed) => void;
  /**
   * A request the peer will never answer (transports that carry each request in an exchange of
   * its own, like Streamable HTTP): its exchange failed, or ended without a readable answer.
   * The relay ends that request as it would on the peer's death; an id it is not waiting on is
   * ignored (already answered). `gone`: the peer could not be reached at all.
   */
  onlost?: (id: RpcId, lost: RequestLost) => void;
  /**
   * The relay no longer waits for this request's answer (it gave up on it and told the peer):
   * what carries it is released now (a Streamable HTTP exchange is closed, which is also that
   * transport's cancellation signal). Nothing is reported for it afterwards.
   */
  forget?(id: RpcId): void;
  /**
   * The peer is not reading what it was sent (true), or has caught up (false): a relay stops
   * reading the other side meanwhile, so what waits for this peer stays bounded.
   */
  onfull?: (full: boolean) => void;
  /** Out-of-band trouble (a write that failed); not necessarily fatal. */
  onerror?: (error: Error) => void;
}
