// Opening a token key from what the user gave: a pkcs11: URI (--key, or the one `init` recorded
// in the home) and a PIN from --pin-file or CLOAKPIPE_PKCS11_PIN, never from the command line.
import type { KeyObject } from 'node:crypto';
import { readSecretFile, SecretFileError } from './secret-file.js';
import { parsePkcs11Uri, UriError } from './uri.js';
import { OtherKeyError, Pkcs11Signer, TokenError } from './pkcs11.js';

export { OtherKeyError, TokenError };

/** How a command names its key: a token URI and where its PIN is (both optional). */
export interface KeyChoice {
  /** `--key pkcs11:…` */
  uri?: string;
  /** `--pin-file FILE` */
  pinFile?: string;
}

export const PIN_ENV = 'CLOAKPIPE_PKCS11_PIN';

const notAlone = (where: string, what: string) => `${where} is not a PIN alone (${what}): refused before the token sees it`;

// What an editor (or a secret made from a file, in the environment) adds around a PIN is sent as
// part of a wrong PIN, and each wrong PIN counts towards locking the token's: refused unsent.
function alone(pin: string, where: string): string {
  if (/^\s|\s$/.test(pin)) throw new TokenError(notAlone(where, 'a space, tab, line end or byte-order mark before or after it'));
  if (/[\0-\x1f\x7f]/.test(pin)) throw new TokenError(notAlone(where, 'a control character, a NUL'));
  return pin;
}

/** The PIN: the file's first line (the reader's own, mode 0600: it unlocks the key), else the environment. `flag` names the file's flag. */
export function readPin(pinFile: string | undefined, flag = '--pin-file'): string {
  if (pinFile !== undefined) {
    let bytes: Buffer;
    try {
      bytes = readSecretFile(pinFile, 'PIN file');
    } catch (e) {
      if (e instanceof SecretFileError) throw new TokenError(e.message);
      throw e;
    }
    let text: string;
    try {
      text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes);
    } catch {
      throw new TokenError(notAlone(`PIN file ${pinFile}`, 'bytes that are not UTF-8'));
    }
    const pin = text.split(/\r\n|\n|\r/)[0];
    if (!pin) throw new TokenError(`PIN file ${pinFile} is empty`);
    return alone(pin, `the first line of PIN file ${pinFile}`);
  }
  const pin = process.env[PIN_ENV];
  if (!pin) throw new TokenError(`the token needs a PIN: ${flag} FILE or ${PIN_ENV}`);
  return alone(pin, PIN_ENV);
}

/** Opens the token key the URI names; throws TokenError (named) when anything is missing. */
export function openTokenSigner(
  uri: string,
  pinFile: string | undefined,
  opts: { create?: boolean; log?: (line: string) => void; role?: string; maker?: string; pinFlag?: string; expect?: KeyObject } = {},
): Pkcs11Signer {
  let parsed;
  try {
    parsed = parsePkcs11Uri(uri);
  } catch (e) {
    if (e instanceof UriError) throw new TokenError(e.message);
    throw e;
  }
  const { pinFlag, ...rest } = opts;
  const pin = readPin(pinFile, pinFlag);
  return Pkcs11Signer.open({ uri: parsed, pin, rereadPin: () => readPin(pinFile, pinFlag), ...rest });
}
