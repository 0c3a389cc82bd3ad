// cloakpipe ledger checkpoint: the signed note an auditor keeps (product.md section 7). The
// home's ledger is verified first, so the gate key never vouches for a ledger that does not hold.
import { sayTo, writeOutput } from '../util/out/index.js';
import { parseFlags } from './args.js';
import { resolveHome } from '../store/home.js';
import { signCheckpoint } from '../ledger/checkpoint.js';
import { verifyLedger } from '../ledger/verify/index.js';
import { openChain, openGateKey } from '../home/open.js';
import type { GateKey } from '../ledger/keys.js';
import { opening, STORE_OPTION } from './store-flags.js';
import { writingOut } from './out-place.js';

const HELP = `usage: cloakpipe ledger checkpoint [--home DIR] [--store URL] [--key pkcs11:URI] [--pin-file FILE] [--out FILE] [--json]

Verifies the home's ledger, then prints a checkpoint: a C2SP signed note of its size and the
RFC 6962 root over every entry, signed by the gate key. Keep it apart from the home; later,
\`cloakpipe verify --checkpoint FILE\` fails unless the ledger still holds every entry it covers.
  --out FILE   write the note to FILE instead of standard output
  --store URL  the chain of this home's gate in a fleet's shared store (or CLOAKPIPE_STORE)
  --key, --pin-file  the gate key in a PKCS#11 token, as for ledger anchor (default: the URI
               init recorded; the PIN from --pin-file, else $CLOAKPIPE_PKCS11_PIN)
Exit 0 printed, 1 the ledger does not verify (nothing is signed), 2 usage error.
`;

export async function run(argv: string[]): Promise<number> {
  const { values } = parseFlags(argv, {
    home: { type: 'string' },
    out: { type: 'string' },
    json: { type: 'boolean' },
    ...STORE_OPTION,
    key: { type: 'string' },
    'pin-file': { type: 'string' },
  });
  if (values.help) return void process.stdout.write(HELP), 0;
  const home = resolveHome(values.home);
  const key = openGateKey(home, { key: { uri: values.key, pinFile: values['pin-file'] } });
  try {
    return await checkpoint(values, key);
  } finally {
    key.close(); // a token's sessions
  }
}

async function checkpoint(values: { home?: string; store?: string; out?: string; json?: boolean }, key: GateKey): Promise<number> {
  // Only this home's gate: the note is signed with this home's key, over this key's chain.
  const chain = await opening(() => openChain({ home: values.home, store: values.store }));
  const report = await verifyLedger({ snapshot: chain.snapshot }, { publicKey: key.publicKey });
  if (!report.ok || !report.tree) {
    const f = report.failure!;
    process.stdout.write(`ledger INVALID${f.seq === null ? '' : ` at seq ${f.seq}`} (${f.code}): ${f.detail}; no checkpoint signed\n`);
    return 1;
  }
  const note = signCheckpoint(report.tree, key);
  if (values.out !== undefined) await writingOut(values.out, () => writeOutput(values.out!, note));
  // With --out /dev/stdout the note is the output: what the command says of it goes to stderr.
  const say = sayTo(values.out);
  if (values.json) say.write(JSON.stringify({ size: report.tree.size, root: report.tree.root, note }) + '\n');
  else if (values.out !== undefined) say.write(`checkpoint of ${report.tree.size} entries written to ${values.out}\n`);
  else process.stdout.write(note);
  return 0;
}
