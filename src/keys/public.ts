// A public key given on its own (an approver's, a Rekor log's, the gate's for verify): never a
// private key. node:crypto derives a public key from a private PEM without a word, so a private
// key handed where a public one is asked would be taken, and its file copied onto the gate's
// host or an auditor's laptop: the very key the gate or the log exists to keep elsewhere.
import { createPrivateKey } from 'node:crypto';

/** Whether `pem` parses as a private key (PKCS#8, PKCS#1, SEC1, encrypted or not). */
export function holdsPrivateKey(pem: string | Buffer): boolean {
  if (/-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----/.test(pem.toString('latin1'))) return true;
  try {
    createPrivateKey({ key: pem, passphrase: '' });
    return true;
  } catch (e) {
    // An encrypted private key asks for its passphrase: a private key all the same.
    return /passphrase|decrypt|bad decrypt/i.test(String((e as Error)?.message ?? ''));
  }
}

/** The message for a private key given as `subject` (e.g. "Rekor key FILE"), never the key itself. */
export function privateKeyRefusal(subject: string): string {
  return `${subject} is a private key: give its public half (the .pub file, or openssl pkey -pubout), and keep the private key where it is`;
}
