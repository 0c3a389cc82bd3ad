// cloakpipe ledger show | export | anchor
import { parseFlags, UsageError } from './args.js';
import { resolveHome } from '../store/home.js';
import { openLedgerSnapshot } from '../store/sqlite/store.js';
import type { Entry } from '../ledger/entry.js';

const HELP = `usage: cloakpipe ledger show [--from SEQ] [--limit N] [--json] [--home DIR]
       cloakpipe ledger export --out FILE [--home DIR]
       cloakpipe ledger anchor [--home DIR] [--tsa URL --tsa-root PEM] [--rekor URL --rekor-key PEM]
       cloakpipe ledger checkpoint [--home DIR] [--out FILE]
       cloakpipe ledger prove SEQ --out FILE [--home DIR]

show    the entries as a table (or one JSON object a line with --json)
export  a self-contained JSONL file of entries, epochs and anchors, for verify --ledger
anchor      seal an epoch of the entries since the last one and anchor it now
prove       one entry with its inclusion proof, epoch and anchors, for verify --proof
checkpoint  a signed note of the ledger's size and root, for an auditor to keep (verify --checkpoint)
`;

const SUBCOMMANDS: Record<string, (argv: string[]) => Promise<number>> = {
  show,
  export: (argv) => delegate('./ledger-export.js', argv),
  anchor: (argv) => delegate('./ledger-anchor.js', argv),
  checkpoint: (argv) => delegate('./ledger-checkpoint.js', argv),
  prove: (argv) => delegate('./ledger-prove.js', argv),
};

export async function run(argv: string[]): Promise<number> {
  const [sub, ...rest] = argv;
  if (!sub || sub === '--help') return void process.stdout.write(HELP), sub ? 0 : 2;
  const fn = SUBCOMMANDS[sub];
  if (!fn) throw new UsageError(`unknown subcommand "${sub}"`);
  return fn(rest);
}

async function delegate(file: string, argv: string[]): Promise<number> {
  const mod = (await import(file)) as { run: (argv: string[]) => Promise<number> };
  return mod.run(argv);
}

function nonNegInt(v: string | undefined, flag: string, dflt: number): number {
  if (v === undefined) return dflt;
  if (!/^[0-9]{1,15}$/.test(v)) throw new UsageError(`${flag} must be a non-negative integer`);
  return Number(v);
}

/** The one-line summary of an entry: codes, names and short digests, never payloads. */
export function describeEntry(e: Entry): string {
  const short = (d: unknown) => (typeof d === 'string' ? d.replace(/^sha256:/, '').slice(0, 12) : '');
  const parts: string[] = [];
  if (e.kind === 'decision') {
    parts.push(String(e.outcome));
    if (e.tool) parts.push(String(e.tool));
    else if (e.tool_digest) parts.push(`tool#${short(e.tool_digest)}`);
    if (e.reason) parts.push(String(e.reason));
    if (e.fingerprint) parts.push(`fp ${short(e.fingerprint)}`);
  } else if (e.kind === 'result') {
    parts.push(String(e.outcome), `for #${e.decision}`);
  } else if (e.kind === 'startup') {
    parts.push(String(e.mode), String(e.release));
  } else if (e.kind === 'epoch') {
    parts.push(`#${e.first}..#${e.last}`, `${e.size} entries`, `root ${short(e.root)}`);
  } else if (e.kind === 'pins') {
    parts.push(String(e.action), String(e.tool), short(e.observed ?? e.digest));
  } else {
    for (const k of ['action', 'reason', 'outcome', 'from', 'to', 'cause']) if (e[k] !== undefined) parts.push(`${k}=${e[k]}`);
  }
  return parts.join('  ');
}

async function show(argv: string[]): Promise<number> {
  const { values } = parseFlags(argv, {
    from: { type: 'string' },
    limit: { type: 'string' },
    json: { type: 'boolean' },
    home: { type: 'string' },
  });
  if (values.help) return void process.stdout.write(HELP), 0;
  const from = nonNegInt(values.from, '--from', 0);
  const limit = nonNegInt(values.limit, '--limit', Number.MAX_SAFE_INTEGER);
  const home = resolveHome(values.home);
  const snap = openLedgerSnapshot(home.ledger);
  try {
    if (!values.json) process.stdout.write(`${'SEQ'.padStart(6)}  ${'TIME'.padEnd(24)}  ${'KIND'.padEnd(9)}  DETAIL\n`);
    for (const body of snap.bodies(from, limit)) {
      const e = JSON.parse(body) as Entry;
      if (values.json) process.stdout.write(JSON.stringify(e) + '\n');
      else process.stdout.write(`${String(e.seq).padStart(6)}  ${e.ts.padEnd(24)}  ${e.kind.padEnd(9)}  ${describeEntry(e)}\n`);
    }
  } finally {
    snap.close();
  }
  return 0;
}
