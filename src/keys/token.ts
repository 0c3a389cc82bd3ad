// Opening a token key from what the user gave: a pkcs11: URI (--key, or the one `init` recorded
// in the home) and a PIN from --pin-file or CLOAKPIPE_PKCS11_PIN, never from the command line.
import { readSecretFile, SecretFileError } from './secret-file.js';
import { parsePkcs11Uri, UriError } from './uri.js';
import { Pkcs11Signer, TokenError } from './pkcs11.js';

export { TokenError };

/** How a command names its key: a token URI and where its PIN is (both optional). */
export interface KeyChoice {
  /** `--key pkcs11:…` */
  uri?: string;
  /** `--pin-file FILE` */
  pinFile?: string;
}

export const PIN_ENV = 'CLOAKPIPE_PKCS11_PIN';

/** The PIN: the file's first line (the reader's own, mode 0600: it unlocks the key), else the environment. `flag` names the file's flag. */
export function readPin(pinFile: string | undefined, flag = '--pin-file'): string {
  if (pinFile !== undefined) {
    let text: string;
    try {
      text = readSecretFile(pinFile, 'PIN file').toString('utf8');
    } catch (e) {
      if (e instanceof SecretFileError) throw new TokenError(e.message);
      throw e;
    }
    const pin = text.split(/\r?\n/)[0];
    if (!pin) throw new TokenError(`PIN file ${pinFile} is empty`);
    return pin;
  }
  const pin = process.env[PIN_ENV];
  if (!pin) throw new TokenError(`the token needs a PIN: ${flag} FILE or ${PIN_ENV}`);
  return pin;
}

/** Opens the token key the URI names; throws TokenError (named) when anything is missing. */
export function openTokenSigner(
  uri: string,
  pinFile: string | undefined,
  opts: { create?: boolean; log?: (line: string) => void; role?: string; maker?: string; pinFlag?: string } = {},
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
