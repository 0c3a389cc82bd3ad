// One confined session: create the hardened container, admit it, start the watchdog, attach,
// start, admit again, write the initial payload, then run the bridge until the agent exits or
// something stops it. Guards against: the container outliving the session (every path ends in
// kill + forced removal, the watchdog covers the bridge itself), a weakened container reaching
// the payload (admission twice), and agent bytes reaching a log (fixed codes only).
import type { Duplex } from 'node:stream';
import type { JsonObject } from '../core/json.js';
import { Demuxer, Engine, type ContainerInspect } from './engine.js';
import { admissionViolations, stateViolations } from './admission.js';
import { containerName, hardenedProfile, type CreateBody } from './profile.js';
import { BridgeCore } from './core.js';
import { MAX_FRAME_BYTES, MAX_STREAM_BYTES, type StopReason } from './frames.js';
import type { BridgeOutcome, ConfineGate } from './gate-port.js';
import { ControlServer } from './control.js';
import { WatchdogLink, killAndRemove } from './watchdog.js';

export type Ended = 'finished' | 'agent_exit_nonzero' | 'agent_crashed' | 'stopped' | 'refused';

export interface Summary {
  ended: Ended;
  /** A fixed code: a StopReason, or why the session was refused. */
  reason: string | null;
  violations: string[];
  allowed: number;
  denied: number;
  calls: number;
  stdout_bytes: number;
  stderr_bytes: number;
  agent_exit_code: number | null;
  container: string | null;
  image: string;
  /** The image's own entrypoint and command, as admission saw them (operator's image, not agent output). */
  entrypoint: string[] | null;
  removed: boolean;
}

export function exitCodeOf(s: Summary): number {
  if (s.ended === 'refused') return 2;
  // A container left behind is not a normal end, however the agent finished: an orchestrator
  // reading exit 0 would never look for it.
  return s.ended === 'finished' && !(s.container && !s.removed) ? 0 : 1;
}

/** Test-only switches (never reachable from the CLI): each removes one protection. */
export interface InternalOptions {
  weaken?: (body: CreateBody) => void;
  skipAdmission?: boolean;
  skipFlowAdmission?: boolean;
  watchdog?: boolean;
  ackCheck?: boolean;
  watchdogScript?: string;
  /** Runs once the container exists, before anything else is done with it (a test kills the bridge there). */
  onCreated?: (id: string) => Promise<void> | void;
  /** Runs once the container is started, before its second admission check. */
  onStarted?: (id: string) => Promise<void>;
  /** Runs once the container is not running, before its removal (observers). */
  beforeRemove?: (id: string) => Promise<void>;
  onRunning?: (info: { containerId: string; watchdogPid: number | null }) => void;
  /** The attach connection, so a test can make the attach client die. */
  onAttach?: (socket: Duplex) => void;
}

export interface SessionOptions {
  engine: Engine;
  imageId: string;
  aliases: ReadonlyMap<string, string>;
  gate: ConfineGate;
  /** One call through the session's relay (confine/upstream.ts). */
  call: (tool: string, args: JsonObject) => Promise<BridgeOutcome>;
  /** Register a callback for the upstream going away (stops the session). */
  onUpstreamGone?: (cb: () => void) => void;
  input: JsonObject;
  /** The task context's label for the initial payload, and the manifest's labels. */
  inputLabel: string | null;
  labels: readonly string[];
  timeoutMs: number;
  maxCalls: number;
  controlPath?: string;
  /** Aborting (SIGINT/SIGTERM in the CLI) stops the session: kill, then remove. */
  signal?: AbortSignal;
  internal?: InternalOptions;
}

function deferred<T>() {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms).unref());

function entrypointOf(i: ContainerInspect): string[] | null {
  const ep = Array.isArray(i?.Config?.Entrypoint) ? i.Config.Entrypoint : [];
  const cmd = Array.isArray(i?.Config?.Cmd) ? i.Config.Cmd : [];
  const all = [...ep, ...cmd].map(String);
  return all.length ? all : null;
}

export async function runSession(o: SessionOptions): Promise<Summary> {
  const x = o.internal ?? {};
  const s: Summary = {
    ended: 'refused',
    reason: null,
    violations: [],
    allowed: 0,
    denied: 0,
    calls: 0,
    stdout_bytes: 0,
    stderr_bytes: 0,
    agent_exit_code: null,
    container: null,
    image: o.imageId,
    entrypoint: null,
    removed: true,
  };
  const refuse = (reason: string, violations: string[] = []) => {
    s.ended = 'refused';
    s.reason = reason;
    s.violations = violations;
    return s;
  };

  // The payload is classified before the agent sees it: its label comes from the task context.
  if (!x.skipFlowAdmission && (o.inputLabel === null || !o.labels.includes(o.inputLabel))) return refuse('input_unclassified');
  const payload = JSON.stringify(o.input) + '\n';
  if (Buffer.byteLength(payload) > MAX_FRAME_BYTES) return refuse('input_too_large');

  const body = hardenedProfile(o.imageId);
  x.weaken?.(body);
  const name = containerName();
  let id: string | null = null;
  const stopped = deferred<StopReason>();
  let exited = false;
  const kill = () => void (id && o.engine.kill(id).catch(() => undefined));
  const core = new BridgeCore({
    aliases: o.aliases,
    gate: o.gate,
    call: o.call,
    maxCalls: o.maxCalls,
    writeToAgent: (line) => {
      if (attach && !attach.destroyed) attach.write(line);
    },
    onStop: (reason) => {
      kill(); // no grace period
      stopped.resolve(reason);
    },
  });
  if (o.signal?.aborted) core.stop('interrupted');
  o.signal?.addEventListener('abort', () => core.stop('interrupted'), { once: true });
  let attach: Duplex | null = null;
  let watchdog: WatchdogLink | null = null;
  let control: ControlServer | null = null;
  let timer: NodeJS.Timeout | null = null;
  let waitP: Promise<number | null> = Promise.resolve(null);

  try {
    // The control socket first: a session its operator could not restrict does not start.
    if (o.controlPath) {
      const server = new ControlServer(o.controlPath, (line) => core.control(line));
      try {
        await server.listen();
      } catch {
        return refuse('control_unavailable');
      }
      control = server;
    }
    // The watchdog watches the name before the container exists: a bridge that dies while its
    // create is under way, or before its watchdog is ready, leaves no container behind.
    if (x.watchdog !== false) {
      try {
        watchdog = await WatchdogLink.start({ container: name, socketPath: o.engine.socketPath, ackCheck: x.ackCheck, script: x.watchdogScript }, () => core.stop('watchdog_lost'));
      } catch {
        return refuse('watchdog_unavailable');
      }
    }
    let created: string;
    try {
      created = await o.engine.create(body, name);
    } catch {
      return refuse('create_failed'); // the watchdog, stopped below, removes what a failed create may have made
    }
    // The container is the one of this session's name: an engine (or a socket in front of it)
    // that answered another container's id had that one admitted, and then killed and removed.
    id = name;
    s.container = name;
    s.removed = false;
    const first = await o.engine.inspect(name);
    if (typeof created !== 'string' || first?.Id !== created) return refuse('create_failed');
    id = created;
    s.container = created;

    await x.onCreated?.(id);
    s.entrypoint = entrypointOf(first);
    const v1 = admissionViolations(first, o.imageId);
    if (v1.length && !x.skipAdmission) return refuse('admission', v1);

    attach = await o.engine.attach(id);
    x.onAttach?.(attach);
    const demux = new Demuxer(
      (kind, chunk) => (kind === 'stdout' ? core.pushStdout(chunk) : core.pushStderr(chunk)),
      () => core.stop('stream_protocol'),
      MAX_STREAM_BYTES + 1,
    );
    const attachEnded = deferred<void>();
    // Nothing the agent writes is read before the second admission check passed: the attach
    // stays paused until then (the engine holds the agent's output, the agent's writes block).
    attach.pause();
    attach.on('error', () => undefined);
    attach.on('close', () => {
      attachEnded.resolve();
      // The attach client died while the container still runs: stop it.
      setTimeout(() => {
        if (!exited) core.stop('attach_lost');
      }, 1000).unref();
    });
    o.onUpstreamGone?.(() => core.stop('gateway_error'));

    // A session stopped before its container runs (interrupted, its watchdog lost, its upstream
    // gone) starts nothing: the agent never runs without what was to watch it.
    if (core.stopped) {
      s.ended = 'stopped';
      s.reason = core.stopped;
      return s;
    }
    await o.engine.start(id);
    waitP = o.engine.wait(id).then(
      (code) => {
        exited = true;
        return code;
      },
      () => {
        exited = true;
        return null;
      },
    );
    timer = setTimeout(() => core.stop('timeout'), o.timeoutMs);
    await x.onStarted?.(id);

    const second = await o.engine.inspect(id);
    const startedAt = second?.State?.StartedAt;
    const v2 = [...admissionViolations(second, o.imageId), ...stateViolations(second)];
    if (v2.length && !x.skipAdmission) {
      kill();
      return refuse('admission', v2);
    }
    attach.on('data', (c: Buffer) => demux.push(c));
    attach.resume();
    x.onRunning?.({ containerId: id, watchdogPid: watchdog?.pid ?? null });
    if (core.stopped === null) attach.write(payload);

    const first_ = await Promise.race([waitP.then((code) => ({ code })), stopped.promise.then((reason) => ({ reason }))]);
    if ('code' in first_) {
      s.agent_exit_code = first_.code;
      // Let the last output arrive and calls already at the upstream finish (bounded by the stop promise).
      await Promise.race([attachEnded.promise, sleep(2000)]);
      core.endStdout();
      await Promise.race([core.idle(), stopped.promise]);
      const after = await o.engine.inspectOrNull(id).catch(() => undefined);
      if (after === null) core.stop('container_removed');
      else if (after && (after.State?.Running === true || after.State?.StartedAt !== startedAt || (after.RestartCount ?? 0) !== 0)) core.stop('container_restarted');
    }
    if (core.stopped) {
      s.ended = 'stopped';
      s.reason = core.stopped;
    } else if (s.agent_exit_code === 0) {
      s.ended = 'finished';
    } else {
      s.ended = s.agent_exit_code !== null && s.agent_exit_code >= 128 ? 'agent_crashed' : 'agent_exit_nonzero';
    }
    return s;
  } catch {
    s.ended = 'stopped';
    s.reason = core.stopped ?? 'internal_error';
    return s;
  } finally {
    if (timer) clearTimeout(timer);
    core.stop(core.stopped ?? 'internal_error'); // no further replies or calls
    kill();
    await control?.close().catch(() => undefined);
    if (id !== null) {
      if (x.beforeRemove) {
        await Promise.race([waitP, sleep(5000)]);
        await x.beforeRemove(id).catch(() => undefined);
      }
      s.removed = await killAndRemove(o.engine, id);
    }
    watchdog?.stop();
    attach?.destroy();
    // Let the gate record what is queued (a stopping frame's refusal) before the caller closes it.
    await Promise.race([core.idle(), sleep(2000)]);
    s.allowed = core.allowed;
    s.denied = core.denied;
    s.calls = core.calls;
    s.stdout_bytes = core.stdoutBytes;
    s.stderr_bytes = core.stderrBytes;
  }
}
