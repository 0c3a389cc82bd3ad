// cloakpipe pins list | accept: review tool definitions a server changed after they were pinned,
// and take them as the new pins. Accepting is an operator entry in the ledger.
import { parseFlags, UsageError } from './args.js';
import { openHomeWith, type OpenedHome } from '../home/open.js';
import { opening, STORE_OPTION } from './store-flags.js';
import { acceptPins } from '../pins/accept.js';

const HELP = `usage: cloakpipe pins list [--home DIR] [--store URL] [--json]
       cloakpipe pins accept [--tool NAME]... [--release R] [--home DIR] [--store URL] [--json]

list    every pinned tool definition (by digest) and, where the server now answers with
        another definition, the digest awaiting review
accept  take the definitions awaiting review as the new pins (all, or only --tool NAME),
        recorded as an operator entry in the ledger; calls to those tools are served again
--store URL (or CLOAKPIPE_STORE): a fleet's shared PostgreSQL store; its pins hold for every gate,
        and accept is recorded in the chain of this home's gate
`;

export async function run(argv: string[]): Promise<number> {
  const [sub, ...rest] = argv;
  if (!sub || sub === '--help') return void process.stdout.write(HELP), sub ? 0 : 2;
  if (sub === 'list') return list(rest);
  if (sub === 'accept') return accept(rest);
  throw new UsageError(`unknown subcommand "${sub}"`);
}

function open(values: { home?: string; store?: string }): Promise<OpenedHome> {
  return opening(() => openHomeWith({ home: values.home, store: values.store }));
}

async function list(argv: string[]): Promise<number> {
  const { values } = parseFlags(argv, { home: { type: 'string' }, json: { type: 'boolean' }, ...STORE_OPTION });
  if (values.help) return void process.stdout.write(HELP), 0;
  const h = await open(values);
  try {
    const rows = await h.store.transact(() => h.store.pins.list());
    if (values.json) process.stdout.write(JSON.stringify(rows) + '\n');
    else {
      process.stdout.write(`${'RELEASE'.padEnd(28)}  ${'TOOL'.padEnd(24)}  PINNED        AWAITING REVIEW\n`);
      for (const r of rows)
        process.stdout.write(`${r.release.padEnd(28)}  ${r.tool.padEnd(24)}  ${r.digest.slice(7, 19)}  ${r.observed ? r.observed.slice(7, 19) : '-'}\n`);
    }
    return 0;
  } finally {
    h.close();
  }
}

async function accept(argv: string[]): Promise<number> {
  const { values } = parseFlags(argv, {
    home: { type: 'string' },
    tool: { type: 'string', multiple: true },
    release: { type: 'string' },
    json: { type: 'boolean' },
    ...STORE_OPTION,
  });
  if (values.help) return void process.stdout.write(HELP), 0;
  const h = await open(values);
  try {
    const parts = { pins: h.store.pins, ledger: h.ledger, transact: h.store.transact };
    const accepted = await acceptPins(parts, { release: values.release, tools: values.tool }, process.env.USER ?? null);
    if (values.json) process.stdout.write(JSON.stringify(accepted) + '\n');
    else if (accepted.length === 0) process.stdout.write('no definition awaits review\n');
    else for (const a of accepted) process.stdout.write(`${a.release} ${a.tool}: ${a.from.slice(7, 19)} → ${a.to.slice(7, 19)} (ledger entry ${a.entry})\n`);
    return accepted.length > 0 || (values.tool ?? []).length === 0 ? 0 : 1;
  } finally {
    h.close();
  }
}
