// cloakpipe init: create the gate home (src/home/init.ts).
import { parseFlags } from './args.js';
import { initHomeWith } from '../home/init.js';
import { StoreError } from '../store/ports.js';
import { HomeError } from '../home/open.js';

const HELP = `usage: cloakpipe init [--home DIR]
       cloakpipe init [--home DIR] --store postgres://USER@HOST:PORT/DB --gate-id NAME

Create the gate home ($CLOAKPIPE_HOME, default ~/.cloakpipe, mode 0700): the gate's Ed25519
signing key (gate.key), its public key (gate.pub), the ledger database (ledger.db), the
operations database (operations.db), every file mode 0600, and the approvals inbox. Never
overwrites a key, and never creates one beside an existing ledger.

With --store postgres://… (or CLOAKPIPE_STORE), the gate is one of a fleet sharing that
database: the home holds the key and the gate's NAME (gate-id); the database's schema is created
or migrated (safe from several gates at once) and the gate's public key registered under NAME.
Run again on the same home, it migrates only. The password comes from PGPASSWORD or ~/.pgpass,
never from the URL.
`;

export async function run(argv: string[]): Promise<number> {
  const { values } = parseFlags(argv, { home: { type: 'string' }, store: { type: 'string' }, 'gate-id': { type: 'string' } });
  if (values.help) return void process.stdout.write(HELP), 0;
  let home;
  try {
    home = await initHomeWith(values.home as string | undefined, { store: values.store as string | undefined, gateId: values['gate-id'] as string | undefined });
  } catch (e) {
    if (!(e instanceof HomeError) && !(e instanceof StoreError)) throw e;
    process.stderr.write(`cloakpipe init: ${e.message}\n`);
    return 2;
  }
  if (home.target.kind === 'postgres') {
    process.stdout.write(`initialized ${home.dir}\n  key     ${home.key}\n  public  ${home.pub}\n  gate id ${values['gate-id'] as string} (registered in the PostgreSQL store)\n`);
    return 0;
  }
  process.stdout.write(`initialized ${home.dir}\n  key     ${home.key}\n  public  ${home.pub}\n  ledger  ${home.ledger}\n  ops     ${home.operations}\n`);
  return 0;
}
