// `http-proxy --auth-token-file` (and llm-proxy's) is read as a secret file is
// (keys/secret-file.ts), but for its mode: a file owned by another user (who could add a token
// of theirs for any agent id), a link owned by another user, or anything but a regular file
// (a FIFO held the start for ever) is refused, exit 2, named, before anything listens.
import { cloakpipe, makeHome, writeFiles, PERMIT_ALL, MEMORY } from '../helpers/cli.js';
import { tokenFileRefusals } from '../helpers/token-file-refusals.js';

const home = makeHome();
const f = writeFiles({ 'm.yaml': 'version: 1\nrelease: token-file@1\ntools:\n  read_graph: { effect: read, arguments: {} }\n', 'p.cedar': PERMIT_ALL });

tokenFileRefusals(
  (file) => cloakpipe(['http-proxy', '--home', home, '--manifest', f['m.yaml'], '--policy', f['p.cedar'], '--listen', '127.0.0.1:0', '--auth-token-file', file, '--', process.execPath, MEMORY], { timeout: 10_000 }),
  'TOKEN-CANARY-0123456789abcdef agent-a\n',
);
