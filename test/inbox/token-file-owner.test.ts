// `inbox serve --auth-token-file` reads its login token as the gate reads a key or PIN file
// (keys/secret-file.ts): a file of another user (who can read it, or put a token of theirs in
// it and log in), a link of another user, or anything but a regular file (a FIFO holds the read
// for ever) is refused, exit 2, named, before anything listens; the token is never echoed.
import { join } from 'node:path';
import { cloakpipe, makeHome, tempDir } from '../helpers/cli.js';
import { keygen } from '../helpers/recording-gate.js';
import { tokenFileRefusals } from '../helpers/token-file-refusals.js';

const dir = tempDir('cloakpipe-inbox-token-file-');
keygen(join(dir, 'approver'));
const KEY = join(dir, 'approver.key');
const home = makeHome();

tokenFileRefusals(
  (file) => cloakpipe(['inbox', 'serve', '--home', home, '--approver-key', KEY, '--listen', '127.0.0.1:0', '--auth-token-file', file], { timeout: 10_000 }),
  'inbox-login-token-CANARY-0123456789\n',
);
