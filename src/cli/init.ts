// cloakpipe init: create the gate home (src/home/init.ts).
import { parseFlags } from './args.js';
import { initHomeWith } from '../home/init.js';
import { StoreError } from '../store/ports.js';
import { HomeError } from '../home/open.js';

const HELP = `usage: cloakpipe init [--home DIR] [--key pkcs11:URI [--pin-file FILE]]
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

With --key 'pkcs11:token=T;object=O?module-path=/path/module.so' (RFC 7512) the gate key lives
in a PKCS#11 token (an HSM, or a KMS behind a PKCS#11 module): the Ed25519 pair is generated
inside the token when it holds none there (CKM_EC_EDWARDS_KEY_PAIR_GEN; sensitive, not
extractable), and the home records the URI (gate.token) and the public key (gate.pub), never a
private key. The PIN comes from --pin-file FILE (mode 0600) or $CLOAKPIPE_PKCS11_PIN, never from
the command line. A module, token, PIN or key that is not there: exit 2, named. A token key is
one gate's (ADR 106): a fleet's store refuses one another gate registered, and init says so when
the key was already in the token.
`;

export async function run(argv: string[]): Promise<number> {
  const { values } = parseFlags(argv, { home: { type: 'string' }, store: { type: 'string' }, 'gate-id': { type: 'string' }, key: { type: 'string' }, 'pin-file': { type: 'string' } });
  if (values.help) return void process.stdout.write(HELP), 0;
  let home;
  try {
    home = await initHomeWith(values.home as string | undefined, {
      store: values.store as string | undefined,
      gateId: values['gate-id'] as string | undefined,
      key: { uri: values.key as string | undefined, pinFile: values['pin-file'] as string | undefined },
    });
  } catch (e) {
    if (!(e instanceof HomeError) && !(e instanceof StoreError)) throw e;
    process.stderr.write(`cloakpipe init: ${e.message}\n`);
    return 2;
  }
  // The home cannot see other homes: a key it did not make may be another's (ADR 106).
  if (values.key !== undefined && home.generated === false)
    process.stderr.write(
      `cloakpipe init: the key ${values.key as string} was already in the token: a key for one home only; another home signing with it would keep a ledger no one can tell from this one's by its key\n`,
    );
  if (home.target.kind === 'postgres') {
    process.stdout.write(`initialized ${home.dir}\n  key     ${home.key}\n  public  ${home.pub}\n  gate id ${values['gate-id'] as string} (registered in the PostgreSQL store)\n`);
    return 0;
  }
  const key = values.key !== undefined ? `${values.key as string} (${home.generated ? 'generated in the token' : 'already in the token'}; recorded in ${home.token})` : home.key;
  process.stdout.write(`initialized ${home.dir}\n  key     ${key}\n  public  ${home.pub}\n  ledger  ${home.ledger}\n  ops     ${home.operations}\n`);
  return 0;
}
