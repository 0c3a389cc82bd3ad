// Opening a gate from its configuration. Everything that can fail does so here, before the
// upstream is spawned: a manifest, policy, context, key or store that does not load stops
// start-up with a clear message (fail closed).
import { ContextSource } from '../contract/context.js';
import { openHomeWith } from '../home/open.js';
import type { HomePaths } from '../store/home.js';
import { StoreError, type Store } from '../store/ports.js';
import { SignerUnavailable } from '../core/signer.js';
import type { KeyChoice } from '../keys/token.js';
import { PinSession } from '../pins/session.js';
import { GateSession } from './session.js';
import { fileRules, RulesSource } from './rules.js';
import { Gate, type Mode } from './gate.js';
import type { AdmissionService, GateServices } from './services.js';
import { openOperationsServices } from '../operations/open.js';
import { FlowSession } from '../flow/session.js';
import { setDeclaredTools } from '../telemetry/fields.js';
import { guardOtelDiagnostics } from '../telemetry/spans.js';
import { Anchoring, loadAnchorClients, type AnchorTargets } from '../ledger/anchoring.js';

export interface GateConfig {
  home?: string;
  /** sqlite (the home's files) or postgres://… (a fleet's shared database); CLOAKPIPE_STORE. */
  store?: string;
  /** The gate key in a PKCS#11 token (--key pkcs11:…, --pin-file); default: the home's. */
  key?: KeyChoice;
  manifestPath: string;
  policyPath: string;
  contextPath?: string;
  mode: Mode;
  agent?: string;
  approverKeys: string[];
  /** How long a call refused approval_required waits in the inbox (default 1h). */
  requestTtlMs?: number;
  callTimeoutMs: number;
  /** Epochs and anchors (issue 3): seal every interval and at shutdown when any is set. */
  anchorIntervalMs?: number;
  anchors?: AnchorTargets;
  /** A confined session's live restriction (confine/): read by the admission check. */
  admission?: AdmissionService;
}

export interface OpenedGate {
  gate: Gate;
  home: HomePaths;
  store: Store;
  close(reason: string): Promise<void>;
}

export async function openGate(cfg: GateConfig): Promise<OpenedGate> {
  const context = new ContextSource(cfg.contextPath);
  const say = (m: string) => process.stderr.write(`cloakpipe mcp-proxy: ${m}\n`);
  const files = { manifest: cfg.manifestPath, policy: cfg.policyPath };
  const load = fileRules(files, say);
  const initial = load(context.get().task);
  const { manifest, policy } = initial;
  await loadAnchorClients(cfg.anchors ?? {}); // before anything is opened: a failure leaves nothing to close
  const opened = await openHomeWith({ home: cfg.home, store: cfg.store, key: cfg.key, log: say });
  const { store, ledger, key, paths: home } = opened;
  // A store error refuses the call (fail_closed, in the gate); the operator learns why here,
  // once per cause (e.g. a database deleted under the running gate).
  const told = new Set<string>();
  const tell = (e: unknown) => {
    if ((e instanceof StoreError || e instanceof SignerUnavailable) && !told.has(e.message)) {
      told.add(e.message);
      process.stderr.write(`cloakpipe mcp-proxy: ${e.message}; every call is refused fail_closed\n`);
    }
    throw e;
  };
  const later = store.transactLater ?? store.transact;
  const commit = {
    run: <T>(fn: () => T): Promise<T> => store.transact(fn).catch(tell),
    later: <T>(fn: () => T): Promise<T> => later(fn).catch(tell),
  };
  let ops;
  try {
    ops = await openOperationsServices(store, {
      approverKeys: cfg.approverKeys,
      gateKeyId: key.keyId,
      approvalsDir: home.approvals,
      shared: 'gateId' in store,
      gateId: 'gateId' in store ? (store as { gateId: string }).gateId : null,
      ...(cfg.requestTtlMs !== undefined ? { requestTtlMs: cfg.requestTtlMs } : {}),
    });
  } catch (e) {
    opened.close();
    throw e;
  }
  const agentFromTask = context.get().task.agent;
  const services: GateServices = {
    agent: cfg.agent ?? (typeof agentFromTask === 'string' ? agentFromTask : 'agent'),
    agentFromTask: cfg.agent === undefined,
    mode: cfg.mode,
    rates: store.rates,
    operations: ops.operations,
    approvals: ops.approvals,
    ...(cfg.admission ? { admission: cfg.admission } : {}),
  };
  const declare = (m: typeof manifest) => setDeclaredTools(Object.keys(m.manifest.tools));
  declare(manifest);
  guardOtelDiagnostics();
  // The manifest and policy files are re-read when they change (rules.ts).
  const rules = new RulesSource(files, load, initial, { log: say, onLoaded: (r) => declare(r.manifest) });
  const gate = new Gate({
    rules,
    context,
    ledger,
    commit,
    services,
    callTimeoutMs: cfg.callTimeoutMs,
    // A session's ceilings are those of the manifest when it starts (product.md section 6), its
    // classify rules those in force; an undeclared sensitivity stops start-up (the default
    // session is opened here).
    openSession: (scope = {}) =>
      new GateSession(
        new FlowSession(rules.lastLoaded.manifest, (scope.context ?? context).get(), { inForce: () => rules.lastLoaded.manifest }),
        new PinSession(store.pins, () => rules.lastLoaded.manifest.manifest),
        scope,
      ),
  });
  try {
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
  } catch (e) {
    opened.close(); // the caller never gets the gate to close: the store and key end here
    throw e;
  }
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
      gate.flushReports(); // before anything closing is awaited: the last calls' reports are not lost
      if (closed) return;
      closed = true;
      try {
        await anchoring.stop();
        await gate.closeUnrecorded(); // before the shutdown entry, which follows every outcome
        await gate.record({ kind: 'shutdown', reason });
        if (sealing) await anchoring.tick().catch((e) => process.stderr.write(`cloakpipe mcp-proxy: shutdown epoch not sealed: ${(e as Error).message}\n`));
      } finally {
        gate.flushReports(); // calls answered while the shutdown entry was committed
        opened.close();
      }
    },
  };
}
