// cloakpipe keygen --out PREFIX: an approver's Ed25519 key pair. The private key (PREFIX.key,
// PKCS#8 PEM, 0600) signs receipts with `cloakpipe approve`; the public key (PREFIX.pub, SPKI
// PEM) is what a gate trusts with --approver-key. Never overwrites either file.
import { closeSync, existsSync, openSync, writeSync, unlinkSync } from 'node:fs';
import { createPublicKey } from 'node:crypto';
import { parseFlags, required, UsageError } from './args.js';
import { generateGateKeyPem, keyIdOf } from '../ledger/keys.js';
import { openTokenSigner, TokenError } from '../keys/token.js';

const HELP = `usage: cloakpipe keygen --out PREFIX [--json]
       cloakpipe keygen --key pkcs11:URI [--pin-file FILE] --out PREFIX [--json]

Create an approver key pair: PREFIX.key (Ed25519 private key, PKCS#8 PEM, mode 0600) and
PREFIX.pub (its public key, SPKI PEM). Give PREFIX.pub to the gate with --approver-key and
keep PREFIX.key with the person who approves. Existing files are never overwritten (exit 2).
Prints the key id (sha256 of the public key's SPKI DER).

With --key pkcs11:URI (RFC 7512, with module-path) the key pair is generated inside the PKCS#11
token when it holds none there (sensitive, not extractable) and only PREFIX.pub is written;
\`approve --key pkcs11:URI\` then signs with it. The PIN comes from --pin-file FILE (mode 0600)
or $CLOAKPIPE_PKCS11_PIN, never from the command line.
`;

function writeNew(path: string, text: string, mode: number) {
  const fd = openSync(path, 'wx', mode);
  try {
    writeSync(fd, text);
  } finally {
    closeSync(fd);
  }
}

export async function run(argv: string[]): Promise<number> {
  const { values } = parseFlags(argv, { out: { type: 'string' }, json: { type: 'boolean' }, key: { type: 'string' }, 'pin-file': { type: 'string' } });
  if (values.help) {
    process.stdout.write(HELP);
    return 0;
  }
  const prefix = required(values.out as string | undefined, '--out');
  if (values.key !== undefined) return tokenKeygen(values.key, values['pin-file'], `${prefix}.pub`, values.json === true);
  if (values['pin-file'] !== undefined) throw new UsageError('--pin-file goes with --key pkcs11:…');
  const keyPath = `${prefix}.key`;
  const pubPath = `${prefix}.pub`;
  for (const p of [keyPath, pubPath]) if (existsSync(p)) throw new UsageError(`${p} exists; keygen never overwrites a key`);
  const { privatePem, publicPem } = generateGateKeyPem();
  try {
    writeNew(keyPath, privatePem, 0o600);
  } catch (e) {
    throw new UsageError(`cannot create ${keyPath}: ${(e as NodeJS.ErrnoException).code ?? 'error'}`);
  }
  try {
    writeNew(pubPath, publicPem, 0o644);
  } catch (e) {
    unlinkSync(keyPath); // a private key without its public half is only a hazard
    throw new UsageError(`cannot create ${pubPath}: ${(e as NodeJS.ErrnoException).code ?? 'error'}`);
  }
  const keyId = keyIdOf(createPublicKey(publicPem));
  if (values.json) process.stdout.write(JSON.stringify({ key: keyPath, public_key: pubPath, key_id: keyId }) + '\n');
  else process.stdout.write(`${keyId}\nwrote ${keyPath} (private, 0600) and ${pubPath}\n`);
  return 0;
}

/** The approver's pair inside a token: generated there when absent; only the public key leaves. */
function tokenKeygen(uri: string, pinFile: string | undefined, pubPath: string, json: boolean): number {
  if (existsSync(pubPath)) throw new UsageError(`${pubPath} exists; keygen never overwrites a key`);
  let signer;
  try {
    signer = openTokenSigner(uri, pinFile, { create: true });
  } catch (e) {
    if (e instanceof TokenError) throw new UsageError(e.message);
    throw e;
  }
  try {
    writeNew(pubPath, signer.publicKey.export({ type: 'spki', format: 'pem' }).toString(), 0o644);
  } catch (e) {
    throw new UsageError(`cannot create ${pubPath}: ${(e as NodeJS.ErrnoException).code ?? 'error'}`);
  } finally {
    signer.close();
  }
  if (json) process.stdout.write(JSON.stringify({ key: uri, public_key: pubPath, key_id: signer.keyId, generated: signer.created }) + '\n');
  else process.stdout.write(`${signer.keyId}\n${signer.created ? 'generated the key pair in' : 'found the key pair in'} the token; wrote ${pubPath}\n`);
  return 0;
}
