// cloakpipe inbox serve: the approval inbox (inbox.md), a local page where a person sees each
// call refused `approval_required` exactly as it would be forwarded and approves or denies it.
// Thin: flags, the home and the keys; the server is src/inbox/. Two keys sign here: the approver
// key signs receipts, the gate key signs the operator entry each decision is (ADR 061); either may
// be a key inside a PKCS#11 token.
import { createPublicKey, KeyObject } from 'node:crypto';
import { basename, join } from 'node:path';
import { duration, optionsHelp, parseFlags, required, UsageError, type Options } from './args.js';
import { keyIdOf } from '../ledger/keys.js';
import type { Signer } from '../core/signer.js';
import { isPkcs11Uri, parsePkcs11Uri } from '../keys/uri.js';
import { openHomeWith } from '../home/open.js';
import { DecisionJournal } from '../inbox/decision-journal.js';
import { isLoopback } from '../doors/http-auth.js';
import { loginToken, Sessions, TokenError } from '../inbox/auth.js';
import { DEFAULT_INBOX_CONNECTIONS, InboxServer } from '../inbox/server.js';
import { loadApproverKey, MAX_TTL_MS } from './approve.js';
import { EXIT_TOKEN_HELD } from '../keys/exit-status.js';
import { refuseGateKey } from '../approvals/keys.js';
import { checkTlsFlags, readTls, TLS_OPTIONS, type TlsFiles } from './tls-files.js';

const OPTIONS = {
  'approver-key': {
    type: 'string',
    arg: 'PEM|pkcs11:URI',
    help: "the approver's Ed25519 private key (cloakpipe keygen), or the key inside a PKCS#11 token (keygen --key pkcs11:…); it never leaves this process, nor the token",
  },
  'approver-pin-file': { type: 'string', arg: 'FILE', help: "the approver token's PIN (mode 0600)", defaultText: '$CLOAKPIPE_PKCS11_PIN' },
  home: { type: 'string', arg: 'DIR', help: 'the gate home', defaultText: '$CLOAKPIPE_HOME or ~/.cloakpipe' },
  store: { type: 'string', arg: 'URL', help: 'sqlite, or the postgres://USER@HOST:PORT/DB a fleet of gates shares', defaultText: '$CLOAKPIPE_STORE or sqlite' },
  key: { type: 'string', arg: 'pkcs11:URI', help: 'sign the operator entries with the gate key in a PKCS#11 token (RFC 7512 URI with module-path)', defaultText: "the home's (gate.key, or the token init recorded)" },
  'pin-file': { type: 'string', arg: 'FILE', help: "the gate key token's PIN (mode 0600)", defaultText: '$CLOAKPIPE_PKCS11_PIN' },
  listen: { type: 'string', arg: 'HOST:PORT', default: '127.0.0.1:8932', help: 'where to serve the page (a loopback address unless --auth-token-file)' },
  'auth-token-file': { type: 'string', arg: 'FILE', help: 'the login token (one line, 16+ characters, mode 0600); required to listen beyond loopback', defaultText: 'a new token each start, printed' },
  ttl: { type: 'string', arg: 'DURATION', default: '15m', help: 'how long an approval receipt is valid (at most 24h)' },
  'max-connections': {
    type: 'string',
    arg: 'N',
    default: String(DEFAULT_INBOX_CONNECTIONS),
    help: 'open connections at most (each open page holds one for its updates); one beyond is closed at once. Keep it under the descriptor limit (ulimit -n), which the store shares',
  },
  ...TLS_OPTIONS,
} satisfies Options;

const HELP = `usage: cloakpipe inbox serve --approver-key PEM|pkcs11:URI [--approver-pin-file FILE]
                           [--home DIR | --store URL] [--key pkcs11:URI] [--pin-file FILE]
                           [--listen 127.0.0.1:8932] [--auth-token-file FILE] [--ttl 15m]
                           [--max-connections 256] [--tls-cert PEM --tls-key PEM]

Serve the approval inbox: a page listing the calls refused approval_required, newest first,
updated as they arrive. Each shows the tool, every argument as it would be forwarded, the task,
the session label and the manifest rule that requires approval. Approve signs a receipt with the
approver key for that exact call (as cloakpipe approve does), valid for --ttl and usable once,
and puts it where the gate takes receipts: the host's identical retry is allowed. Deny closes the
request. Both are operator entries in the ledger (digests only), signed with the gate key of the
home (--key and --pin-file as for mcp-proxy). A request the gate has kept longer than its
--request-ttl (default 1h) expires.

Either key may be inside a PKCS#11 token (an HSM): --approver-key pkcs11:URI signs receipts in
the approver's token (PIN from --approver-pin-file, else $CLOAKPIPE_PKCS11_PIN), and a home made
by init --key signs its entries in the gate's (PIN from --pin-file, else $CLOAKPIPE_PKCS11_PIN).
PINs never come from the command line. A token away while serving: what needs its key fails
and decides nothing (Approve needs both keys, Deny the gate key), the request waits, and it
works again when the token is back.

The page asks for a login token: without --auth-token-file a new one is made at each start and
printed on stderr as a login link. The session cookie is HttpOnly and SameSite=Strict, every
approve and deny carries a CSRF token, and nothing of a request is logged. With --tls-cert and
--tls-key the page is served over HTTPS only: its cookie is Secure, only its https origin may
change anything, and browsers are told to keep to HTTPS (HSTS). Beyond loopback, serve it over
TLS (here or in a proxy in front): the token and the arguments cross the network.

options:
${optionsHelp(OPTIONS)}
  --help                          this text

Exit status: 0 stopped by SIGTERM or SIGINT, 2 usage or configuration error,
${EXIT_TOKEN_HELD}.
`;

/** What the page and the start line call the approver key: its file's name, or its object in its token. */
function approverName(keyPath: string): string {
  if (!isPkcs11Uri(keyPath)) return basename(keyPath);
  const u = parsePkcs11Uri(keyPath); // already opened: it parses
  const key = u.object !== undefined ? u.object : `id ${u.id?.toString('hex') ?? '?'}`;
  const token = u.token !== undefined ? u.token : u.serial !== undefined ? `serial ${u.serial}` : `slot ${u.slotId}`;
  return `${key} in token ${token}`;
}

/** HOST:PORT, or [IPv6]:PORT. */
export function parseListen(v: string): { host: string; port: number } {
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([^:[\]]+)):(\d{1,5})$/.exec(v);
  const port = m ? Number(m[3]) : NaN;
  if (!m || port > 65535) throw new UsageError('--listen must be HOST:PORT (an IPv6 host in brackets)');
  return { host: m[1] ?? m[2], port };
}

export async function run(argv: string[]): Promise<number> {
  const [sub, ...rest] = argv;
  if (!sub || sub === '--help' || sub === '-h') {
    process.stdout.write(HELP);
    return sub ? 0 : 2;
  }
  if (sub !== 'serve') throw new UsageError(`unknown subcommand "${sub}" (serve)`);
  const { values } = parseFlags(rest, OPTIONS);
  if (values.help) return void process.stdout.write(HELP), 0;
  const keyPath = required(values['approver-key'] as string | undefined, '--approver-key');
  const { host, port } = parseListen(values.listen as string);
  const loopback = isLoopback(host);
  const tokenFile = values['auth-token-file'] as string | undefined;
  if (!loopback && tokenFile === undefined)
    throw new UsageError(`--listen ${host} is not a loopback address: give --auth-token-file so only those holding the token can approve`);
  checkTlsFlags(values);
  const maxConnections = Number(values['max-connections']);
  if (!Number.isSafeInteger(maxConnections) || maxConnections < 1) throw new UsageError('--max-connections must be a positive integer');
  const ttlMs = duration(values.ttl as string, '--ttl');
  if (ttlMs > MAX_TTL_MS) throw new UsageError('--ttl is at most 24h: an approval is for a call about to happen');
  let token;
  try {
    token = loginToken(tokenFile);
  } catch (e) {
    if (e instanceof TokenError) throw new UsageError(e.message);
    throw e;
  }
  const say = (m: string) => process.stderr.write(`cloakpipe inbox: ${m}\n`);
  let tls: TlsFiles | undefined;
  try {
    if (values['tls-cert'] !== undefined) tls = readTls(values['tls-cert'] as string, values['tls-key'] as string);
  } catch (e) {
    say(`cannot start: ${(e as Error).message}`);
    return 2;
  }
  // A usage error (exit 2, named) when the file, token, PIN or key is not there.
  const privateKey = loadApproverKey(keyPath, values['approver-pin-file'] as string | undefined, { key: '--approver-key', pinFile: '--approver-pin-file' }, { log: say });
  const closeApprover = () => (privateKey instanceof KeyObject ? undefined : privateKey.close());
  let home;
  try {
    home = await openHomeWith({
      home: values.home as string | undefined,
      store: values.store as string | undefined,
      key: { uri: values.key as string | undefined, pinFile: values['pin-file'] as string | undefined },
      log: say,
    });
  } catch (e) {
    closeApprover();
    say(`cannot start: ${(e as Error).message}`);
    return 2;
  }
  // By its public key: a PEM key whose pair was also imported into the gate's token is found there too.
  const publicKey = privateKey instanceof KeyObject ? createPublicKey(privateKey) : (privateKey as Signer).publicKey;
  const keyId = keyIdOf(publicKey);
  try {
    refuseGateKey(keyId, home.key.keyId, `--approver-key ${keyPath}`, publicKey);
  } catch (e) {
    closeApprover();
    home.close();
    say(`cannot start: ${(e as Error).message}`);
    return 2;
  }
  const approver = { privateKey, keyId, name: approverName(keyPath) };
  const server = new InboxServer({
    store: home.store,
    ledger: home.ledger,
    approver,
    ttlMs,
    user: process.env.USER ?? null,
    // The embedded store commits ledger.db and operations.db one after the other (a fleet's store: as one).
    ...('gateId' in home.store ? {} : { journal: new DecisionJournal(join(home.paths.dir, 'inbox-decisions')) }),
    sessions: new Sessions(token.token),
    maxConnections,
    host,
    port,
    loopback,
    ...(tls ? { tls } : {}),
    say,
  });
  let url: string;
  try {
    url = await server.start();
  } catch (e) {
    home.close();
    closeApprover();
    say(`cannot listen on ${values.listen as string}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
    return 2;
  }
  say(`serving ${url}/ (approvals signed with ${approver.name}, key ${approver.keyId}, valid ${values.ttl as string})`);
  if (!loopback && !tls) say('beyond loopback in clear: the login token and the arguments cross the network; serve with --tls-cert, or behind a TLS proxy');
  if (token.generated) say(`log in at ${url}/login#token=${token.token} (a new token at each start; --auth-token-file keeps one)`);
  await new Promise<void>((resolve) => {
    process.once('SIGTERM', () => resolve());
    process.once('SIGINT', () => resolve());
  });
  await server.stop();
  home.close();
  closeApprover();
  return 0;
}
