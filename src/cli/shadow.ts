// cloakpipe shadow report: what enforce would have refused in shadow mode (src/onboarding/shadow-report.ts).
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { duration, optionsHelp, parseFlags, UsageError, type Options } from './args.js';
import { openLedgerView } from '../home/open.js';
import { resolveHome } from '../store/home.js';
import { EntryFormatError, parseStoredEntry, type LedgerEntry } from '../ledger/entry.js';
import { loadManifest } from '../contract/manifest.js';
import { shadowReport } from '../onboarding/shadow-report.js';

const OPTIONS = {
  home: { type: 'string', arg: 'DIR', help: 'the gate home', defaultText: '$CLOAKPIPE_HOME or ~/.cloakpipe' },
  since: { type: 'string', arg: 'DURATION', help: 'only decisions this recent (e.g. 24h)', defaultText: 'the whole ledger' },
  manifest: { type: 'string', multiple: true, arg: 'FILE', help: "a manifest to point into, besides the home's servers/*/manifest.yaml" },
  json: { type: 'boolean', help: 'one JSON object a line' },
} satisfies Options;

const HELP = `usage: cloakpipe shadow report [--home DIR] [--since DURATION] [--manifest FILE]... [--json]

What enforce would have refused while the gate ran in shadow mode (the ledger's would_refuse
decisions), by tool and reason, with the count, the first and last time, the manifest (found by
the digest the decisions name) and the lines of it to change. Review each: widen the manifest or
policy where the calls were meant, keep the refusal where they were not; then --mode enforce.

options:
${optionsHelp(OPTIONS)}
  --help                          this text
`;

export async function run(argv: string[]): Promise<number> {
  const [sub, ...rest] = argv;
  if (sub === undefined || sub === '--help') return void process.stdout.write(HELP), sub ? 0 : 2;
  if (sub !== 'report') throw new UsageError(`unknown subcommand "${sub}" (shadow report)`);
  const { values } = parseFlags(rest, OPTIONS);
  if (values.help) return void process.stdout.write(HELP), 0;
  let sinceIso: string | undefined;
  if (values.since !== undefined) sinceIso = new Date(Date.now() - duration(values.since, '--since')).toISOString();
  const home = resolveHome(values.home);
  const candidates = [...(values.manifest ?? [])];
  const servers = join(home.dir, 'servers');
  if (existsSync(servers)) for (const n of readdirSync(servers)) if (existsSync(join(servers, n, 'manifest.yaml'))) candidates.push(join(servers, n, 'manifest.yaml'));
  const manifests = new Map<string, { path: string; text: string }>();
  for (const path of candidates) {
    try {
      const m = loadManifest(path);
      if (!manifests.has(m.digest)) manifests.set(m.digest, { path, text: readFileSync(path, 'utf8') });
    } catch (e) {
      if (values.manifest?.includes(path)) throw new UsageError(`--manifest ${path}: ${(e as Error).message}`);
    }
  }
  const snap = openLedgerView({ home: values.home });
  const entries: LedgerEntry[] = [];
  let unreadable = 0;
  try {
    for (const body of snap.bodies(0, Number.MAX_SAFE_INTEGER)) {
      try {
        entries.push(parseStoredEntry(body) as unknown as LedgerEntry);
      } catch (err) {
        if (!(err instanceof EntryFormatError)) throw err;
        unreadable++;
      }
    }
  } finally {
    snap.close();
  }
  const groups = shadowReport(entries, manifests, sinceIso);
  if (values.json) for (const g of groups) process.stdout.write(JSON.stringify(g) + '\n');
  else if (groups.length === 0) process.stdout.write('no call would have been refused in enforce mode\n');
  else {
    const total = groups.reduce((n, g) => n + g.calls, 0);
    process.stdout.write(`${total} call(s) enforce would have refused:\n`);
    for (const g of groups) {
      const tool = g.tool ?? `undeclared tool ${g.tool_digest?.slice(0, 19)}`;
      const where = g.manifest ? `${g.manifest}${g.lines ? `:${g.lines[0]}-${g.lines[1]}` : ''}` : `manifest ${g.manifest_digest.slice(0, 19)} (not found: pass --manifest FILE)`;
      process.stdout.write(`\n  ${tool}  ${g.reason}  ×${g.calls}  (${g.first} … ${g.last})\n    ${where}\n    ${g.change}\n`);
    }
  }
  if (unreadable > 0) process.stderr.write(`cloakpipe shadow report: ${unreadable} entries are not in their signed form; run cloakpipe verify\n`);
  return unreadable > 0 ? 1 : 0;
}
