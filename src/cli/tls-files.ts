// The certificate and key a door serves HTTPS with (--tls-cert, --tls-key), read and checked to
// be a pair before it listens: a bad pair is a clear start-up error, never the key's text.
import { readFileSync } from 'node:fs';
import { createSecureContext } from 'node:tls';
import { UsageError } from './args.js';
import { readSecretFile } from '../keys/secret-file.js';

export interface TlsFiles {
  cert: Buffer;
  key: Buffer;
}

export const TLS_OPTIONS = {
  'tls-cert': { type: 'string', arg: 'PEM', help: 'serve HTTPS with this certificate (chain, leaf first); needs --tls-key', defaultText: 'plain HTTP' },
  'tls-key': { type: 'string', arg: 'PEM', help: "the certificate's private key" },
} as const;

/** Both flags or neither (a usage error otherwise). */
export function checkTlsFlags(values: Record<string, unknown>): void {
  if ((values['tls-cert'] === undefined) !== (values['tls-key'] === undefined)) throw new UsageError('--tls-cert and --tls-key go together');
}

export function readTls(certPath: string, keyPath: string): TlsFiles {
  const read = (p: string, what: string) => {
    try {
      return readFileSync(p);
    } catch (e) {
      throw new Error(`cannot read ${what} ${p}: ${(e as NodeJS.ErrnoException).code ?? 'error'}`);
    }
  };
  const cert = read(certPath, '--tls-cert');
  // The key is a secret (ADR 120): whoever reads it can pose as this server to its clients, and
  // whoever may write it (or owns it) can put a key of theirs in its place.
  const key = readSecretFile(keyPath, '--tls-key', { rootGroupReads: true });
  try {
    createSecureContext({ cert, key });
  } catch {
    // Never the key's text: only that the pair does not load.
    throw new Error('--tls-cert and --tls-key do not load as a PEM certificate and its private key');
  }
  return { cert, key };
}
