// cloakpipe init: create the gate home (src/home/init.ts).
import { parseFlags } from './args.js';
import { initHome } from '../home/init.js';
import { HomeError } from '../home/open.js';

const HELP = `usage: cloakpipe init [--home DIR]

Create the gate home ($CLOAKPIPE_HOME, default ~/.cloakpipe, mode 0700): the gate's Ed25519
signing key (gate.key), its public key (gate.pub), the ledger database (ledger.db), the
operations database (operations.db), every file mode 0600, and the approvals inbox. Never
overwrites a key, and never creates one beside an existing ledger.
`;

export async function run(argv: string[]): Promise<number> {
  const { values } = parseFlags(argv, { home: { type: 'string' } });
  if (values.help) return void process.stdout.write(HELP), 0;
  let home;
  try {
    home = initHome(values.home as string | undefined);
  } catch (e) {
    if (!(e instanceof HomeError)) throw e;
    process.stderr.write(`cloakpipe init: ${e.message}\n`);
    return 2;
  }
  process.stdout.write(`initialized ${home.dir}\n  key     ${home.key}\n  public  ${home.pub}\n  ledger  ${home.ledger}\n  ops     ${home.operations}\n`);
  return 0;
}
