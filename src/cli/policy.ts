// `cloakpipe policy check | explain | schema`: an operator's tools for writing Cedar rules
// without running a gate. check validates exactly as the gate does at start-up; explain
// evaluates one call file and names the policies behind the decision; schema prints the
// generated Cedar schema the policy is validated against.
import { readFileSync } from 'node:fs';
import * as cedar from '@cedar-policy/cedar-wasm/nodejs';
import { parseFlags, required, UsageError } from './args.js';
import { loadManifest, ManifestError } from '../contract/manifest.js';
import { readContextFile, ContextError, NO_CONTEXT, type TaskContext } from '../contract/context.js';
import type { Manifest } from '../contract/manifest-types.js';
import { parseStrict } from '../wire/strict-parse.js';
import { isJsonObject, type JsonObject } from '../core/json.js';
import { buildSchema } from '../policy/schema.js';
import { formatProblem, loadPolicyFile, PolicyLoadError, type PolicyEngine, type PolicyProblem, type Windows } from '../policy/engine.js';

const HELP = `usage:
  cloakpipe policy check   --manifest FILE --policy FILE [--context FILE] [--json]
  cloakpipe policy explain --manifest FILE --policy FILE --call FILE [--context FILE]
                           [--agent ID] [--session-label LABEL] [--json]
                           [--calls-minute N] [--calls-hour N] [--calls-day N]
                           [--calls-all-minute N] [--calls-all-hour N] [--calls-all-day N]
  cloakpipe policy schema  --manifest FILE [--context FILE]

check    validate the policy against the schema generated from the manifest, as the gate does
         at start-up; exit 0 valid (prints the policy ids), 1 invalid (Cedar's message and
         location), 2 usage or configuration error.
         context.task is typed from the task context (--context): without one, a policy that
         reads context.task.<attr> does not validate.
explain  evaluate one call file {"tool", "arguments"} with the task context and print the
         decision and the policies behind it; exit 0 allow, 1 deny or fail_closed. Call counts
         are zero unless given.
schema   print the generated Cedar schema (Cedar schema syntax).
`;

class ConfigError extends Error {}

type Values = Record<string, string | boolean | undefined>;
// parseFlags is strict about which flags exist; their values are strings or booleans.
const flags = (argv: string[], options: Parameters<typeof parseFlags>[1]): Values => parseFlags(argv, options).values as Values;
const str = (v: string | boolean | undefined): string | undefined => (typeof v === 'string' ? v : undefined);

function manifestOf(path: string): Manifest {
  try {
    return loadManifest(path).manifest;
  } catch (e) {
    if (e instanceof ManifestError) throw new ConfigError(e.message);
    throw e;
  }
}

function contextOf(path: string | undefined): TaskContext {
  if (!path) return NO_CONTEXT;
  try {
    return readContextFile(path);
  } catch (e) {
    if (e instanceof ContextError) throw new ConfigError(e.message);
    throw e;
  }
}

function problemsText(problems: readonly PolicyProblem[], source: string, prefix = ''): string {
  return problems.map((p) => prefix + formatProblem(p, source) + (p.excerpt ? '\n' + p.excerpt.replace(/^/gm, '    ') : '')).join('\n') + '\n';
}

function load(manifest: Manifest, policyPath: string, ctx: TaskContext): PolicyEngine | PolicyLoadError {
  try {
    return loadPolicyFile(manifest, policyPath, { task: ctx === NO_CONTEXT ? undefined : ctx.task });
  } catch (e) {
    if (e instanceof PolicyLoadError) return e;
    throw e;
  }
}

function count(v: string | undefined, flag: string): number {
  if (v === undefined) return 0;
  if (!/^[0-9]{1,15}$/.test(v)) throw new UsageError(`${flag} must be a non-negative integer`);
  return Number(v);
}

async function check(argv: string[]): Promise<number> {
  const values = flags(argv, {
    manifest: { type: 'string' },
    policy: { type: 'string' },
    context: { type: 'string' },
    json: { type: 'boolean' },
  });
  if (values.help) return help();
  const policyPath = required(str(values.policy), '--policy');
  const manifest = manifestOf(required(str(values.manifest), '--manifest'));
  const ctx = contextOf(str(values.context));
  const r = load(manifest, policyPath, ctx);
  if (r instanceof PolicyLoadError) {
    if (values.json) process.stdout.write(JSON.stringify({ valid: false, problems: r.problems }) + '\n');
    process.stderr.write(`policy invalid:\n${problemsText(r.problems, policyPath, '  ')}`);
    return 1;
  }
  if (values.json) {
    process.stdout.write(
      JSON.stringify({ valid: true, digest: r.digest, policies: r.policies.map(({ id, effect, line }) => ({ id, effect, line })), warnings: r.warnings }) + '\n',
    );
  } else {
    process.stdout.write(`policy valid: ${r.policies.length} ${r.policies.length === 1 ? 'policy' : 'policies'}, ${r.digest}\n`);
    for (const p of r.policies) process.stdout.write(`  ${p.id}  ${p.effect}  line ${p.line}\n`);
  }
  if (r.warnings.length) process.stderr.write(problemsText(r.warnings, policyPath, 'warning: '));
  return 0;
}

async function explain(argv: string[]): Promise<number> {
  const values = flags(argv, {
    manifest: { type: 'string' },
    policy: { type: 'string' },
    call: { type: 'string' },
    context: { type: 'string' },
    agent: { type: 'string' },
    'session-label': { type: 'string' },
    json: { type: 'boolean' },
    'calls-minute': { type: 'string' },
    'calls-hour': { type: 'string' },
    'calls-day': { type: 'string' },
    'calls-all-minute': { type: 'string' },
    'calls-all-hour': { type: 'string' },
    'calls-all-day': { type: 'string' },
  });
  if (values.help) return help();
  const policyPath = required(str(values.policy), '--policy');
  const callPath = required(str(values.call), '--call');
  const manifest = manifestOf(required(str(values.manifest), '--manifest'));
  const ctx = contextOf(str(values.context));
  const calls: Windows = { minute: count(str(values['calls-minute']), '--calls-minute'), hour: count(str(values['calls-hour']), '--calls-hour'), day: count(str(values['calls-day']), '--calls-day') };
  const callsAll: Windows = {
    minute: count(str(values['calls-all-minute']), '--calls-all-minute'),
    hour: count(str(values['calls-all-hour']), '--calls-all-hour'),
    day: count(str(values['calls-all-day']), '--calls-all-day'),
  };

  let call: JsonObject;
  try {
    const doc = parseStrict(readFileSync(callPath, 'utf8').trim());
    if (!isJsonObject(doc) || typeof doc.tool !== 'string' || (doc.arguments !== undefined && !isJsonObject(doc.arguments))) {
      throw new Error('shape');
    }
    call = doc;
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    throw new ConfigError(code ? `cannot read call file ${callPath}: ${code}` : `call file ${callPath} must be strict JSON {"tool": NAME, "arguments": {...}}`);
  }
  const tool = call.tool as string;
  const args = (call.arguments ?? {}) as JsonObject;

  const r = load(manifest, policyPath, ctx);
  if (r instanceof PolicyLoadError) {
    process.stderr.write(`policy invalid:\n${problemsText(r.problems, policyPath, '  ')}`);
    return 1;
  }
  if (!Object.prototype.hasOwnProperty.call(manifest.tools, tool)) {
    const out = { decision: 'undeclared_tool', tool, policyIds: [], policies: [], summary: 'the manifest does not declare this tool; the policy is not consulted', errors: [] };
    process.stdout.write(values.json ? JSON.stringify(out) + '\n' : `decision: undeclared_tool\n  ${out.summary}\n`);
    return 1;
  }
  const agentFromTask = typeof ctx.task.agent === 'string' ? ctx.task.agent : undefined;
  const agent = str(values.agent) ?? agentFromTask ?? 'agent';
  const sessionLabel = str(values['session-label']) ?? ctx.sensitivity ?? manifest.labels[0];
  const x = r.explain({ agent, tool, args, task: ctx.task, sessionLabel, calls, callsAll });
  if (values.json) {
    process.stdout.write(JSON.stringify({ ...x, tool, agent, sessionLabel, calls, callsAll, policyDigest: r.digest }) + '\n');
  } else {
    const lines = [`decision: ${x.decision}`, `  ${x.summary}`, `  request: Agent::${JSON.stringify(agent)} call_tool Tool::${JSON.stringify(tool)}, session label ${sessionLabel}`];
    lines.push(`  calls (this tool, this task): minute ${calls.minute}, hour ${calls.hour}, day ${calls.day}; all tools: minute ${callsAll.minute}, hour ${callsAll.hour}, day ${callsAll.day}`);
    if (x.omitted.length) lines.push(`  left out of context.args (Cedar cannot hold the value): ${x.omitted.join(', ')}`);
    for (const e of x.errors) lines.push(`  error: ${e}`);
    for (const p of x.policies) lines.push('', `${p.id} (${p.effect}, ${policyPath}:${p.line}):`, p.text.replace(/^/gm, '    '));
    process.stdout.write(lines.join('\n') + '\n');
  }
  return x.decision === 'allow' ? 0 : 1;
}

async function schema(argv: string[]): Promise<number> {
  const values = flags(argv, { manifest: { type: 'string' }, context: { type: 'string' }, json: { type: 'boolean' } });
  if (values.help) return help();
  const manifest = manifestOf(required(str(values.manifest), '--manifest'));
  const ctx = contextOf(str(values.context));
  const s = buildSchema(manifest, { task: ctx === NO_CONTEXT ? undefined : ctx.task });
  if (values.json) {
    process.stdout.write(JSON.stringify(s, null, 2) + '\n');
    return 0;
  }
  const t = cedar.schemaToText(s as cedar.Schema);
  if (t.type === 'failure') throw new ConfigError(`cannot print schema: ${t.errors.map((e) => e.message).join('; ')}`);
  process.stdout.write(t.text + '\n');
  return 0;
}

function help(): number {
  process.stdout.write(HELP);
  return 0;
}

export async function run(argv: string[]): Promise<number> {
  const [sub, ...rest] = argv;
  try {
    switch (sub) {
      case 'check':
        return await check(rest);
      case 'explain':
        return await explain(rest);
      case 'schema':
        return await schema(rest);
      case '--help':
      case '-h':
      case 'help':
        return help();
      default:
        throw new UsageError(sub ? `unknown subcommand "${sub}"\n${HELP}` : `missing subcommand\n${HELP}`);
    }
  } catch (e) {
    if (e instanceof ConfigError) {
      process.stderr.write(`cloakpipe policy: ${e.message}\n`);
      return 2;
    }
    throw e;
  }
}
