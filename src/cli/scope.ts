// cloakpipe scope report: per protected effect declared in the manifest's `effects:` section,
// the four claims (authorization, correlation, observation, complete mediation) with a status
// and reasons, path by path. Exit 0 when the report was produced (whatever the statuses say);
// 1 when it was produced but the ledger failed verification (every claim resting on it is NOT
// ESTABLISHED); 2 usage or configuration error (flags, manifest, no effects, evidence, home).
import { parseFlags, required, UsageError } from './args.js';
import { loadManifest, ManifestError } from '../contract/manifest.js';
import { parseEffects } from '../contract/effects.js';
import { EvidenceError, loadEvidence } from '../scope/evidence.js';
import { buildReport, renderText } from '../scope/report.js';
import { HomeSources, outcomesOf, readLedgerFacts, SourceError, type LedgerFacts, type StoredOutcome } from '../scope/sources.js';
import { openChain } from '../home/open.js';
import { loadPublicKey } from '../ledger/keys.js';
import { resolveHome } from '../store/home.js';
import { storeTarget } from '../store/target.js';
import { opening, STORE_OPTION } from './store-flags.js';

const HELP = `usage: cloakpipe scope report --manifest FILE [--home DIR [--store URL]] [--evidence FILE]... [--json]

For each protected effect in the manifest's effects: section, say which of four claims the
evidence supports, path by path:
  1. authorization       allow decisions for the effect's gate tools (ledger)
  2. correlation         each allowed call linked to its result entry and stored outcome
  3. observation         downstream evidence matched by digest (--evidence: receipts;
                         the confinement suite's counts are an analogue, never the effect)
  4. complete mediation  every declared path has mediation evidence AND the path set has an
                         assessed completeness statement; declaring paths is not evidence
Statuses: ESTABLISHED (evidence cloakpipe checked), ATTESTED (an operator's word, not checked),
ANALOGUE ONLY, NOT ESTABLISHED (each missing piece listed), NOT ASSESSED.

  --manifest FILE   the manifest (YAML or JSON) with an effects: section
  --home DIR        the gate home whose ledger and operations database are read (default:
                    none; without it the ledger-based claims are NOT ASSESSED)
  --store URL       with --home: a fleet's shared PostgreSQL store (or CLOAKPIPE_STORE): the
                    chain of the home's gate (checked with the home's key) and the fleet's
                    stored operations
  --evidence FILE   an evidence file (cloakpipe-scope-evidence v1, or a confinement suite
                    evidence file); repeatable
  --json            the report as one JSON object (cloakpipe-scope-report v1), with counts
                    (allowed, linked, unknown, ...) beside each claim's reasons

Exit 0 the report was produced; 1 produced, but the ledger failed verification;
2 usage or configuration error. See docs/scope.md.
`;

export async function run(argv: string[]): Promise<number> {
  const { values, positionals } = parseFlags(
    argv,
    {
      manifest: { type: 'string' },
      home: { type: 'string' },
      evidence: { type: 'string', multiple: true },
      json: { type: 'boolean' },
      ...STORE_OPTION,
    },
    true,
  );
  if (values.help) return void process.stdout.write(HELP), 0;
  const [sub, ...extra] = positionals;
  if (sub !== 'report') throw new UsageError(sub ? `unknown subcommand "${sub}" (expected: report)` : 'missing subcommand (expected: report)');
  if (extra.length) throw new UsageError(`unexpected argument "${extra[0]}"`);
  const manifestPath = required(values.manifest as string | undefined, '--manifest');
  if (values.store !== undefined && values.home === undefined) throw new UsageError('--store goes with --home DIR (the gate whose chain is reported)');

  let manifest;
  try {
    manifest = loadManifest(manifestPath);
  } catch (e) {
    if (e instanceof ManifestError) throw new UsageError(e.message);
    throw e;
  }
  if (!manifest.manifest.effects) throw new UsageError('the manifest declares no effects: section: nothing to report on');
  const effects = parseEffects(manifest.manifest.effects, Object.keys(manifest.manifest.tools));

  let evidence;
  try {
    evidence = ((values.evidence as string[] | undefined) ?? []).map(loadEvidence);
  } catch (e) {
    if (e instanceof EvidenceError) throw new UsageError(e.message);
    throw e;
  }

  let ledger: LedgerFacts | null = null;
  let outcomes: Map<string, StoredOutcome> | null = null;
  if (values.home !== undefined && storeTarget(values.store as string | undefined).kind === 'postgres') {
    [ledger, outcomes] = await fromSharedStore(values.home as string, values.store as string | undefined);
  } else if (values.home !== undefined) {
    let home: HomeSources;
    try {
      home = new HomeSources(values.home as string);
    } catch (e) {
      if (e instanceof SourceError) throw new UsageError(e.message);
      throw e;
    }
    try {
      ledger = await readLedgerFacts(home.ledger);
    } catch (e) {
      if ((e as { name?: string }).name === 'StoreError') throw new UsageError((e as Error).message);
      throw e;
    }
    outcomes = home.storedOutcomes();
  }

  const report = buildReport(manifest, { effects, ledger, outcomes, evidence });
  process.stdout.write(values.json ? JSON.stringify(report, null, 2) + '\n' : renderText(report));
  return ledger?.broken ? 1 : 0;
}

/** A fleet gate's chain (checked with its home's key) and the operations the fleet shares. */
async function fromSharedStore(dir: string, store: string | undefined): Promise<[LedgerFacts, Map<string, StoredOutcome>]> {
  let publicKey;
  try {
    publicKey = loadPublicKey(resolveHome(dir).pub);
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  const chain = await opening(() => openChain({ home: dir, store }));
  const ledger = await readLedgerFacts({ describe: `gate ${chain.gateId!} in the shared store (the home's gate.pub)`, source: { snapshot: chain.snapshot }, publicKey });
  // Read-only, without the gate key: a report signs nothing.
  const target = storeTarget(store);
  if (target.kind !== 'postgres') throw new UsageError('--store must name the shared PostgreSQL store');
  const { openPostgresOperationsReader } = await import('../store/postgres/store.js');
  const r = await opening(() => openPostgresOperationsReader(target));
  try {
    return [ledger, outcomesOf(await r.read((ops) => ops.list(undefined, Number.MAX_SAFE_INTEGER)))];
  } finally {
    await r.end();
  }
}
