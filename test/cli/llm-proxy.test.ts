// cloakpipe llm-proxy's command line: what it refuses before it opens anything (exit 2, the
// reason named, no secret echoed).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cloakpipe } from '../helpers/cli.js';

const BASE = ['llm-proxy', '--manifest', 'm.yaml', '--policy', 'p.cedar'];

test('llm-proxy refuses a missing, credentialed or queried --upstream-url, a bad --on-refusal or --max-connections, a public listen without tokens, MCP-only flags', () => {
  const cases: [string[], RegExp][] = [
    [[], /missing required --upstream-url/],
    [['--upstream-url', 'https://sk-secret-123:x@api.example/v1'], /must not carry credentials/],
    [['--upstream-url', 'ftp://api.example/'], /must be http or https/],
    [['--upstream-url', 'https://api.example/v1?key=sk-secret-123'], /must not carry a query or fragment/],
    [['--upstream-url', 'https://api.example/v1#sk-secret-123'], /must not carry a query or fragment/],
    [['--upstream-url', 'https://api.example/v1?'], /must not carry a query or fragment/],
    [['--upstream-url', 'https://api.example/v1', '--on-refusal', 'drop'], /--on-refusal must be rewrite or error/],
    [['--upstream-url', 'https://api.example/v1', '--listen', '0.0.0.0:8933'], /not loopback: it needs --auth-token-file/],
    [['--upstream-url', 'https://api.example/v1', '--upstream-header', 'X: y'], /unknown option --upstream-header/],
    [['--upstream-url', 'https://api.example/v1', '--list-undeclared'], /unknown option --list-undeclared/],
    [['--upstream-url', 'https://api.example/v1', '--max-connections', '0'], /--max-connections must be a positive integer/],
    [['--upstream-url', 'https://api.example/v1', '--max-connections', 'many'], /--max-connections must be a positive integer/],
  ];
  for (const [flags, why] of cases) {
    const r = cloakpipe([...BASE, ...flags]);
    assert.equal(r.status, 2, flags.join(' '));
    assert.match(r.stderr, why);
    assert.ok(!r.stderr.includes('sk-secret-123'), 'the credential is not echoed');
  }
});
