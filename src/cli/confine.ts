// cloakpipe confine: run one agent session in a no-network container whose only way out is the
// gate (confinement.md). Exit 0 the agent finished normally; 1 stopped for a violation, a bound,
// a timeout, the agent crashed / exited non-zero, or its container was left behind; 2 usage,
// preflight or admission refusal.
// Nothing the agent wrote ever reaches this command's output: the summary is counts and codes.
import { release } from 'node:os';
import { parseFlags, required, timerDuration, UsageError } from './args.js';
import { parseStrict } from '../wire/strict-parse.js';
import { readBoundedFile } from '../util/regular-file.js';
import { isJsonObject, type JsonObject } from '../core/json.js';
import { loadManifest } from '../contract/manifest.js';
import { readContextFile } from '../contract/context.js';
import { Engine } from '../confine/engine.js';
import { IMAGE_ID } from '../confine/profile.js';
import { loadAliases } from '../confine/aliases.js';
import { PREFLIGHT_TEXT, isLocalUnixSocket, preflightFailures, readCorePattern } from '../confine/preflight.js';
import { openConfineGate, type ConfineGate } from '../confine/gate-port.js';
import { ConfineUpstream } from '../confine/upstream.js';
import { exitCodeOf, runSession, type Summary } from '../confine/bridge.js';
import { MAX_FRAME_BYTES, STOP_TEXT, type StopReason } from '../confine/frames.js';

const HELP = `usage: cloakpipe confine --image sha256:<64 hex> --aliases FILE --manifest FILE --policy FILE
    --context FILE --input FILE [--timeout 15s] [--max-calls 16] [--control SOCKET]
    [--approver-key PEM]... [--home DIR] [--json] -- UPSTREAM_COMMAND [ARGS...]

Runs one agent session inside a Docker container with no network, a read-only root, no mounts,
no capabilities and no log driver. The agent's only channel is its stdin/stdout: each line
{"operation": ..., "arguments": {...}} is mapped through --aliases to a manifest tool, decided by
the gate, and forwarded to the upstream MCP server; the answer {"allowed": ..., "result": ...}
comes back on stdin. --input is the first line the agent reads (a JSON object, at most 64 KiB).
--control SOCKET accepts live restrictions (see cloakpipe confine-control).
--approver-key PEM (repeatable): a call to an \`approval: required\` tool passes only with a
receipt from one of these keys in the home's inbox (cloakpipe approve --home); without any,
such calls are always refused.
Exit 0 finished, 1 stopped, the agent failed or its container could not be removed, 2 refused
(usage, preflight, admission).
Experimental adapter. Out of scope: the bridge and its watchdog lost at once, a dead Docker
daemon, a host crash.
`;

function fail(msg: string): number {
  process.stderr.write(`cloakpipe confine: ${msg}\n`);
  return 2;
}

function summaryText(s: Summary): string {
  const reason = s.reason ? ` (${s.reason in STOP_TEXT ? STOP_TEXT[s.reason as StopReason] : s.reason})` : '';
  return [
    `session: ${s.ended}${reason}`,
    `calls: ${s.calls} (allowed ${s.allowed}, denied ${s.denied})`,
    `agent output: stdout ${s.stdout_bytes} bytes, stderr ${s.stderr_bytes} bytes`,
    `agent exit code: ${s.agent_exit_code ?? '-'}`,
    ...(s.violations.length ? [`admission violations: ${s.violations.join(', ')}`] : []),
    `container: ${s.container ?? '-'}${s.container ? (s.removed ? ' (removed)' : ' (NOT removed)') : ''}`,
    `image: ${s.image}`,
    `entrypoint: ${s.entrypoint ? JSON.stringify(s.entrypoint) : '-'}`,
  ].join('\n') + '\n';
}

const INPUT_UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

export async function run(argv: string[]): Promise<number> {
  const dash = argv.indexOf('--');
  const own = dash >= 0 ? argv.slice(0, dash) : argv;
  const upstreamCmd = dash >= 0 ? argv.slice(dash + 1) : [];
  const { values } = parseFlags(own, {
    image: { type: 'string' },
    aliases: { type: 'string' },
    manifest: { type: 'string' },
    policy: { type: 'string' },
    context: { type: 'string' },
    input: { type: 'string' },
    timeout: { type: 'string', default: '15s' },
    'max-calls': { type: 'string', default: '16' },
    control: { type: 'string' },
    'approver-key': { type: 'string', multiple: true },
    home: { type: 'string' },
    json: { type: 'boolean' },
  });
  if (values.help) return void process.stdout.write(HELP), 0;
  const image = required(values.image as string | undefined, '--image');
  if (!IMAGE_ID.test(image)) throw new UsageError('--image must be an immutable local image id: sha256:<64 hex> (tags are refused)');
  const aliasesPath = required(values.aliases as string | undefined, '--aliases');
  const manifestPath = required(values.manifest as string | undefined, '--manifest');
  const policyPath = required(values.policy as string | undefined, '--policy');
  const contextPath = required(values.context as string | undefined, '--context');
  const inputPath = required(values.input as string | undefined, '--input');
  if (upstreamCmd.length === 0) throw new UsageError('missing upstream command after --');
  const timeoutMs = timerDuration(values.timeout as string, '--timeout');
  const maxCallsText = values['max-calls'] as string;
  if (!/^[0-9]{1,6}$/.test(maxCallsText)) throw new UsageError('--max-calls must be a non-negative integer');
  const maxCalls = Number(maxCallsText);

  // Configuration: manifest, aliases, context, input. Any failure refuses start.
  let labels: string[];
  let aliases: Map<string, string>;
  let inputLabel: string | null;
  let input: JsonObject;
  try {
    const manifest = loadManifest(manifestPath);
    labels = manifest.manifest.labels;
    aliases = loadAliases(aliasesPath, new Set(Object.keys(manifest.manifest.tools)));
    inputLabel = readContextFile(contextPath).sensitivity;
    // Read like the manifest beside it (a regular file), and no more than it may hold: a FIFO
    // whose writer never closed, or a link to a device, was read until an EOF that never came.
    const raw = readBoundedFile(inputPath, MAX_FRAME_BYTES, { followLinks: true });
    if (!raw) return fail('--input is larger than 64 KiB');
    // As the wire reads a frame: bytes that are not UTF-8 are refused, never handed on as U+FFFD.
    let text: string;
    try {
      text = INPUT_UTF8.decode(raw.bytes);
    } catch {
      return fail('--input is not valid UTF-8');
    }
    const v = parseStrict(text.trim());
    if (!isJsonObject(v)) return fail('--input must be one JSON object');
    input = v;
  } catch (e) {
    return fail(`cannot start: ${(e as Error).message}`);
  }
  if (inputLabel === null || !labels.includes(inputLabel)) return fail('the task context must give the initial payload a sensitivity label the manifest declares');

  // Host preflight: read-only checks, never a change of host policy.
  const engine = new Engine();
  const info = await engine.info().catch(() => null);
  const failures = preflightFailures({ platform: process.platform, socketIsLocalUnix: isLocalUnixSocket(engine.socketPath), corePattern: readCorePattern(), info, kernel: release() });
  if (failures.length) return fail(`preflight refused: ${failures.map((f) => PREFLIGHT_TEXT[f]).join('; ')}`);
  const img = await engine.imageInspect(image).catch(() => null);
  if (!img || img.Id !== image) return fail('the image is not present locally under that id (no pull)');

  // The gate, then the upstream behind the session's relay; either failing refuses start.
  let gate: ConfineGate;
  try {
    gate = await openConfineGate({
      home: values.home as string | undefined,
      manifestPath,
      policyPath,
      contextPath,
      callTimeoutMs: timeoutMs,
      approvedTools: aliases.values(),
      approverKeys: (values['approver-key'] as string[] | undefined) ?? [],
    });
  } catch (e) {
    return fail(`cannot start: ${(e as Error).message}`);
  }
  let upstream: ConfineUpstream;
  try {
    upstream = await ConfineUpstream.connect(upstreamCmd[0], upstreamCmd.slice(1), { gate: gate.relayGate });
  } catch {
    await gate.close('upstream_unavailable').catch(() => undefined);
    return fail('cannot start: the upstream MCP server did not start');
  }

  const abort = new AbortController();
  const onSignal = () => abort.abort();
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  process.on('SIGHUP', onSignal);
  let summary: Summary;
  try {
    summary = await runSession({
      engine,
      imageId: image,
      aliases,
      gate,
      call: (tool, args) => upstream.call(tool, args),
      onUpstreamGone: (cb) => upstream.onGone(cb),
      input,
      inputLabel,
      labels,
      timeoutMs,
      maxCalls,
      controlPath: values.control as string | undefined,
      signal: abort.signal,
    });
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    process.off('SIGHUP', onSignal);
    await upstream.close();
  }
  // The shutdown entry says how the session ended, in the summary's fixed codes.
  await gate.close(`confine_${summary.ended}${summary.reason ? `:${summary.reason}` : ''}`).catch(() => undefined);
  process.stdout.write(values.json ? JSON.stringify(summary) + '\n' : summaryText(summary));
  return exitCodeOf(summary);
}
