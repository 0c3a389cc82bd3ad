// cloakpipe ledger show | export | anchor
import { parseFlags, UsageError } from './args.js';
import { openChain } from '../home/open.js';
import { GATE_OPTION, opening, STORE_OPTION } from './store-flags.js';
import { EntryFormatError, parseStoredEntry, type LedgerEntry } from '../ledger/entry.js';
import { visible } from './visible.js';

const HELP = `usage: cloakpipe ledger show [--from SEQ] [--limit N] [--json] [--home DIR] [--store URL [--gate NAME]]
       cloakpipe ledger export --out FILE [--home DIR] [--store URL [--gate NAME]]
       cloakpipe ledger export --all --out DIR --store URL
       cloakpipe ledger anchor [--home DIR] [--store URL] [--tsa URL --tsa-root PEM] [--rekor URL --rekor-key PEM]
       cloakpipe ledger checkpoint [--home DIR] [--store URL] [--out FILE]
       cloakpipe ledger prove SEQ --out FILE [--home DIR] [--store URL [--gate NAME]]

show    the entries as a table (or one JSON object a line with --json)
export  a self-contained JSONL file of entries, epochs and anchors, for verify --ledger
anchor      seal an epoch of the entries since the last one and anchor it now
prove       one entry with its inclusion proof, epoch and anchors, for verify --proof
checkpoint  a signed note of the ledger's size and root, for an auditor to keep (verify --checkpoint)

--store URL (or CLOAKPIPE_STORE) reads a fleet's shared PostgreSQL store: each gate keeps its own
chain there; the default is this home's gate, --gate NAME another gate's (show, export, prove),
--all every gate's (export, one file per gate in DIR).
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
export function describeEntry(e: LedgerEntry): string {
  const short = (d: string | undefined) => (d ?? '').replace(/^sha256:/, '').slice(0, 12);
  switch (e.kind) {
    case 'decision':
      return [e.outcome, e.tool ?? (e.tool_digest ? `tool#${short(e.tool_digest)}` : ''), e.reason ?? '', e.fingerprint ? `fp ${short(e.fingerprint)}` : '']
        .filter(Boolean)
        .join('  ');
    case 'result':
      return [e.outcome, `for #${e.decision}`, ...(e.why ? [`why=${e.why}`] : [])].join('  ');
    case 'startup':
      return `${e.mode}  ${e.release}`;
    case 'shutdown':
      return `reason=${e.reason}`;
    case 'epoch':
      return `#${e.first}..#${e.last}  ${e.size} entries  root ${short(e.root)}`;
    case 'pins':
      return `${e.action}  ${e.tool}  ${short(e.action === 'changed' ? e.observed : e.digest)}`;
    case 'reload':
      return e.outcome === 'loaded' ? `loaded  manifest ${short(e.manifest_digest)}  policy ${short(e.policy_digest)}` : 'failed';
    case 'label':
      return `from=${e.from}  to=${e.to}  cause=${e.cause}`;
    case 'anchor_failure':
      return `epoch #${e.epoch}  ${e.anchor}  reason=${e.reason}`;
    case 'session':
      return e.action === 'open' ? `open  ${short(e.session)}  agent=${e.agent}${e.task !== null ? `  task=${e.task}` : ''}` : `close  ${short(e.session)}  reason=${e.reason}`;
    case 'operator':
      if (e.action === 'reconcile') return `action=reconcile  outcome=${e.outcome}  ${e.state_before} -> ${e.state}`;
      if (e.action === 'pins_accept') return `action=pins_accept  ${e.tool}  ${short(e.from)} -> ${short(e.to)}`;
      if (e.action === 'approve' || e.action === 'deny') return `action=${e.action}  ${e.tool}  ${short(e.fingerprint)}  request #${e.request_entry}`;
      return `action=${e.action}  accepted=${e.accepted}  admission=${e.admission}`;
  }
}

async function show(argv: string[]): Promise<number> {
  const { values } = parseFlags(argv, {
    from: { type: 'string' },
    limit: { type: 'string' },
    json: { type: 'boolean' },
    home: { type: 'string' },
    ...STORE_OPTION,
    ...GATE_OPTION,
  });
  if (values.help) return void process.stdout.write(HELP), 0;
  // Without --from, every row is shown, also one stored below seq 0 (verify refuses it).
  const from = values.from === undefined ? undefined : nonNegInt(values.from, '--from', 0);
  const limit = nonNegInt(values.limit, '--limit', Number.MAX_SAFE_INTEGER);
  const snap = (await opening(() => openChain({ home: values.home, store: values.store, gate: values.gate }))).snapshot;
  let unreadable = 0;
  try {
    if (!values.json) process.stdout.write(`${'SEQ'.padStart(6)}  ${'TIME'.padEnd(24)}  ${'KIND'.padEnd(9)}  DETAIL\n`);
    for (const body of snap.bodies(from, limit)) {
      // Read strictly: a body a lenient parser reads one way and SQLite another is shown as what it is.
      let e: LedgerEntry;
      try {
        e = parseStoredEntry(body) as unknown as LedgerEntry;
        // What the table prints must be there: a forged row may lack it (verify names it).
        if (!Number.isSafeInteger(e.seq) || typeof e.ts !== 'string' || typeof e.kind !== 'string') throw new EntryFormatError('entry lacks seq, ts or kind');
      } catch (err) {
        if (!(err instanceof EntryFormatError)) throw err;
        unreadable++;
        if (!values.json) process.stdout.write(`${'?'.padStart(6)}  ${''.padEnd(24)}  ${'?'.padEnd(9)}  UNREADABLE: ${err.message} (cloakpipe verify names it)\n`);
        continue;
      }
      if (values.json) process.stdout.write(body + '\n');
      else process.stdout.write(visible(`${String(e.seq).padStart(6)}  ${e.ts.padEnd(24)}  ${e.kind.padEnd(9)}  ${describeEntry(e)}`) + '\n');
    }
  } finally {
    snap.close();
  }
  if (unreadable > 0) process.stderr.write(`cloakpipe ledger show: ${unreadable} entries are not in their signed form; run cloakpipe verify\n`);
  return unreadable > 0 ? 1 : 0;
}
