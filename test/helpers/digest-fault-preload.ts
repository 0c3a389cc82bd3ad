// Loaded with `node --import` in front of the real gate binary: SHA-256 over any text holding
// $CLOAKPIPE_TEST_DIGEST_FAULT throws, as a fault inside the runtime or a dependency would (no
// input the gate reads today makes a digest fail; the gate must not count on that).
import crypto from 'node:crypto';
import { syncBuiltinESMExports } from 'node:module';

const marker = process.env.CLOAKPIPE_TEST_DIGEST_FAULT;
if (!marker) throw new Error('CLOAKPIPE_TEST_DIGEST_FAULT must name the text that makes a digest fail');
const hash = crypto.hash;
crypto.hash = function (this: unknown, ...args: Parameters<typeof crypto.hash>) {
  if (typeof args[1] === 'string' && args[1].includes(marker)) throw new RangeError('digest fault');
  return hash.apply(this, args);
} as typeof crypto.hash;
syncBuiltinESMExports(); // the gate's `import { hash } from 'node:crypto'` sees this one
