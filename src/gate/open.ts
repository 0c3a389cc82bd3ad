// Opening a gate from its configuration. Everything that can fail does so here, before the
// upstream is spawned: a manifest, policy, context, key or store that does not load stops
// start-up with a clear message (fail closed).
import { loadManifest } from '../contract/manifest.js';
import { ContextSource } from '../contract/context.js';
import { openHome } from '../home/open.js';
import type { HomePaths } from '../store/home.js';
import { StoreError, type Store } from '../store/ports.js';
import { loadPolicyFile } from '../policy/engine.js';
import { TaskBoundPolicy } from '../policy/task-guard.js';
import { openPins } from '../pins/open.js';
import { Gate, type Mode } from './gate.js';
import type { AdmissionService, GateServices } from './services.js';
import { openOperationsServices } from '../operations/open.js';
import { FlowSession } from '../flow/session.js';
import { flowAfterReply, flowServerOutput } from '../flow/evidence.js';
import { setDeclaredTools } from '../telemetry/fields.js';
import { guardOtelDiagnostics } from '../telemetry/spans.js';
import { Anchoring, type AnchorTargets } from '../ledger/anchoring.js';

export interface GateConfig {
  home?: string;
  manifestPath: string;
  policyPath: string;
  contextPath?: string;
  mode: Mode;
  agent?: string;
  approverKeys: string[];
  callTimeoutMs: number;
  /** Epochs and anchors (issue 3): seal every interval and at shutdown when any is set. */
  anchorIntervalMs?: number;
  anchors?: AnchorTargets;
  /** A confined session's live restriction (confine/): read by the admission check. */
  admission?: AdmissionService;
}

export class StartupError extends Error {}

export interface OpenedGate {
  gate: Gate;
  home: HomePaths;
  store: Store;
  close(reason: string): Promise<void>;
}

export async function openGate(cfg: GateConfig): Promise<OpenedGate> {
  const manifest = loadManifest(cfg.manifestPath);
  const context = new ContextSource(cfg.contextPath);
  const policy = loadPolicyFile(manifest.manifest, cfg.policyPath, { task: context.get().task });
  const opened = openHome({ home: cfg.home });
  const { store, ledger, key, paths: home } = opened;
  // A store error refuses the call (fail_closed, in the gate); the operator learns why here,
  // once per cause (e.g. a database deleted under the running gate).
  const told = new Set<string>();
  const commit = {
    run: <T>(fn: () => T): Promise<T> =>
      store.transact(fn).catch((e: unknown) => {
        if (e instanceof StoreError && !told.has(e.message)) {
          told.add(e.message);
          process.stderr.write(`cloakpipe mcp-proxy: ${e.message}; every call is refused fail_closed\n`);
        }
        throw e;
      }),
  };
  let ops;
  try {
    ops = await openOperationsServices(store, { approverKeys: cfg.approverKeys, approvalsDir: home.approvals });
  } catch (e) {
    opened.close();
    throw e;
  }
  const agentFromTask = context.get().task.agent;
  const services: GateServices = {
    agent: cfg.agent ?? (typeof agentFromTask === 'string' ? agentFromTask : 'agent'),
    mode: cfg.mode,
    // A reloaded task context is validated against the policy before it is used (drift → fail_closed).
    policy: new TaskBoundPolicy(policy, context.get().task, {
      source: cfg.policyPath,
      onDrift: (m) => process.stderr.write(`cloakpipe mcp-proxy: ${m}\n`),
    }),
    rates: store.rates,
    operations: ops.operations,
    approvals: ops.approvals,
    pins: openPins(store.pins, manifest),
    ...(cfg.admission ? { admission: cfg.admission } : {}),
  };
  // One flow session per gate process (= one MCP session); an undeclared sensitivity stops start-up.
  const flow = new FlowSession(manifest, context.get());
  services.flow = flow;
  setDeclaredTools(Object.keys(manifest.manifest.tools));
  guardOtelDiagnostics();
  const gate = new Gate({
    manifest,
    context,
    ledger,
    commit,
    services,
    callTimeoutMs: cfg.callTimeoutMs,
    sessionLabel: () => flow.label,
    afterReply: (call, decision, reply) => {
      const label = flowAfterReply(flow, call.tool, decision.tool, reply);
      return label ? [label] : [];
    },
    serverOutput: (output) => {
      const label = flowServerOutput(flow, output);
      return label ? [label] : [];
    },
  });
  await gate.record({
    kind: 'startup',
    mode: cfg.mode,
    release: manifest.manifest.release,
    manifest_digest: manifest.digest,
    policy_digest: policy.digest,
    context_digest: context.get().digest,
    gate_key: key.keyId,
    pid: process.pid,
    operations_recovered: ops.recovered,
  });
  // Epochs: sealed every --anchor-interval and at shutdown (after the shutdown entry, so it is
  // covered), anchored outside the transaction; a failed anchor is an entry, never a stop.
  const anchoring = new Anchoring({
    anchors: store.anchors,
    ledger,
    key,
    transact: store.transact,
    targets: cfg.anchors ?? {},
    log: (m) => process.stderr.write(`cloakpipe mcp-proxy: ${m}\n`),
  });
  const sealing = !!cfg.anchorIntervalMs || anchoring.enabled;
  if (cfg.anchorIntervalMs) anchoring.start(cfg.anchorIntervalMs);
  let closed = false;
  return {
    gate,
    home,
    store,
    async close(reason: string) {
      if (closed) return;
      closed = true;
      try {
        await anchoring.stop();
        await gate.record({ kind: 'shutdown', reason });
        if (sealing) await anchoring.tick().catch((e) => process.stderr.write(`cloakpipe mcp-proxy: shutdown epoch not sealed: ${(e as Error).message}\n`));
      } finally {
        opened.close();
      }
    },
  };
}
