// --tls-key is a secret (ADR 120): a key others may read lets them pose as the gate (to take the
// bearer tokens its clients send), one its group may write lets them put a key of theirs in its
// place. Refused at start, exit 2, named with what to do, the key never printed; a root-owned key
// its group may read (0640 root:ssl-cert) is taken, as PostgreSQL takes a server key. Real binary.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { MEMORY, PERMIT_ALL, cloakpipe, makeHome, tempDir, writeFiles } from '../helpers/cli.js';

const dir = tempDir('cloakpipe-tls-key-');
const cert = join(dir, 'cert.pem');
const key = join(dir, 'key.pem');
execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-days', '1', '-subj', '/CN=localhost', '-keyout', key, '-out', cert], { stdio: 'ignore' });
const f = writeFiles({ 'm.yaml': 'version: 1\nrelease: http-tls-key-mode@1\ntools:\n  read_graph: { effect: read }\n', 'p.cedar': PERMIT_ALL });
const start = () => cloakpipe(['http-proxy', '--home', makeHome(), '--manifest', f['m.yaml'], '--policy', f['p.cedar'], '--listen', '127.0.0.1:0', '--tls-cert', cert, '--tls-key', key, '--', process.execPath, MEMORY], { timeout: 15_000 });

test('a --tls-key others may read, or its group write, is refused at start, named', () => {
  const body = readFileSync(key, 'utf8').split('\n').find((l) => l.length > 8 && !l.startsWith('-----'))!;
  for (const [mode, why] of [
    [0o644, /--tls-key .* is readable by others \(mode must be 0600\): it is 0644; chmod 600 /],
    [0o620, /--tls-key .* is writable by its group \(mode must be 0600\)/],
  ] as const) {
    chmodSync(key, mode);
    const r = start();
    assert.equal(r.status, 2, `${mode.toString(8)}: ${r.stderr}`);
    assert.match(r.stderr, why);
    assert.ok(!r.stderr.includes(body) && !r.stderr.includes('PRIVATE KEY'), 'the key is never printed');
  }
  chmodSync(key, 0o600);
});
