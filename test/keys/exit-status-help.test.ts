// Exit status 137 (ADR 094: a token call held at exit ends the process by SIGKILL) is listed
// where the exit statuses are: cloakpipe --help, the --help of commands that list theirs and sign
// with a token key (approve, inbox serve), and the README. Before, a supervisor seeing 137 found
// it nowhere but in the ADR. The real binary.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { cloakpipe } from '../helpers/cli.js';

const HELD = /137 \(SIGKILL\) a PKCS#11 token never answered a call/;

test('exit status 137 is in --help where exit statuses are listed, and in the README', () => {
  for (const args of [['--help'], ['approve', '--help'], ['inbox', 'serve', '--help']]) {
    const r = cloakpipe(args);
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /Exit status:/, args.join(' '));
    assert.match(r.stdout, HELD, args.join(' '));
  }
  const readme = readFileSync('README.md', 'utf8');
  assert.match(readme, /Exit status: 0 success, 1 a check\s+failed or a call was refused, 2 usage or configuration error, 137 \(killed by SIGKILL\) a PKCS#11\s+token never answered a call/);
});
