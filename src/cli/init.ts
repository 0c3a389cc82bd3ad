// cloakpipe init: create the gate home. Never overwrites a key: a second init on a home that
// has one is refused, since replacing a signing key would orphan the ledger it signed.
import { existsSync, mkdirSync, writeFileSync, chmodSync } from 'node:fs';
import { parseFlags } from './args.js';
import { resolveHome } from '../store/home.js';
import { generateGateKeyPem } from '../ledger/keys.js';
import { openDb } from '../store/sqlite.js';
import { Ledger } from '../ledger/ledger.js';
import { initOperationsSchema } from '../store/operations-schema.js';

const HELP = `usage: cloakpipe init [--home DIR]

Create the gate home ($CLOAKPIPE_HOME, default ~/.cloakpipe): the gate's Ed25519 signing key
(gate.key, mode 0600), its public key (gate.pub), the ledger database (ledger.db), the
operations database (operations.db) and the approvals inbox. Never overwrites a key.
`;

export async function run(argv: string[]): Promise<number> {
  const { values } = parseFlags(argv, { home: { type: 'string' } });
  if (values.help) return void process.stdout.write(HELP), 0;
  const home = resolveHome(values.home as string | undefined);
  if (existsSync(home.key)) {
    process.stderr.write(`cloakpipe init: ${home.key} exists; refusing to overwrite a gate key\n`);
    return 2;
  }
  mkdirSync(home.dir, { recursive: true, mode: 0o700 });
  mkdirSync(home.approvals, { recursive: true, mode: 0o700 });
  const { privatePem, publicPem } = generateGateKeyPem();
  writeFileSync(home.key, privatePem, { mode: 0o600, flag: 'wx' });
  chmodSync(home.key, 0o600);
  writeFileSync(home.pub, publicPem, { mode: 0o644 });
  const ledger = openDb(home.ledger, { create: true });
  Ledger.initSchema(ledger);
  ledger.close();
  const ops = openDb(home.operations, { create: true });
  initOperationsSchema(ops, 'main');
  ops.close();
  process.stdout.write(`initialized ${home.dir}\n  key     ${home.key}\n  public  ${home.pub}\n  ledger  ${home.ledger}\n  ops     ${home.operations}\n`);
  return 0;
}
