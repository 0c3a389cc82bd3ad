// `manifest draft` of a server whose tool takes an argument named `__proto__`, through the real
// binary: the argument is declared with its rules, and the gate in enforce mode with the drafted
// manifest unchanged forwards a call that uses it (and refuses one over its max_len).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { cloakpipe, makeHome, tempDir, ROOT } from '../helpers/cli.js';
import { RawGate } from '../helpers/raw-gate.js';

const SERVER = [process.execPath, join(ROOT, 'dist/test/onboarding/proto-server.js')];

test('an argument named __proto__ is drafted with its rules, and calls using it pass the gate', async () => {
  const dir = tempDir('cloakpipe-draft-proto-');
  const out = join(dir, 'manifest.yaml');
  const r = cloakpipe(['manifest', 'draft', '--out', out, '--', ...SERVER], { timeout: 60_000 });
  assert.equal(r.status, 0, r.stderr);
  const manifest = readFileSync(out, 'utf8');
  assert.match(manifest, /^ {6}__proto__: \{ type: string, max_len: 8, required: true \}$/m);
  const gate = new RawGate({ home: makeHome(), manifest: out, policy: join(dir, 'manifest.cedar'), upstream: SERVER, flags: ['--mode', 'enforce'] });
  try {
    await gate.initialize();
    const call = (id: number, args: string) => (gate.send(`{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"set_option","arguments":${args}}}\n`), gate.next());
    const ok = await call(1, '{"__proto__":"dark","scope":"user"}');
    assert.equal(ok.error, undefined, JSON.stringify(ok));
    assert.equal(ok.result.content[0].text, 'got __proto__,scope', 'the server got the argument');
    const long = await call(2, '{"__proto__":"far too long"}');
    assert.equal(long.error?.data?.reason, 'argument_invalid', JSON.stringify(long));
  } finally {
    await gate.end();
  }
});
