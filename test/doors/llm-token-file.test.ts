// `llm-proxy --auth-token-file` is read as http-proxy's is (doors/http-auth.ts readTokenFile): the
// same refusals, through the LLM door's own command.
import { cloakpipe, makeHome, writeFiles, PERMIT_ALL } from '../helpers/cli.js';
import { tokenFileRefusals } from '../helpers/token-file-refusals.js';

const home = makeHome();
const f = writeFiles({ 'm.yaml': 'version: 1\nrelease: llm-token-file@1\ntools:\n  lookup: { effect: read, arguments: {} }\n', 'p.cedar': PERMIT_ALL });

tokenFileRefusals(
  (file) => cloakpipe(['llm-proxy', '--home', home, '--manifest', f['m.yaml'], '--policy', f['p.cedar'], '--upstream-url', 'http://127.0.0.1:9/v1', '--listen', '127.0.0.1:0', '--auth-token-file', file], { timeout: 10_000 }),
  'TOKEN-CANARY-0123456789abcdef agent-a\n',
);
