// Host preflight: the engine behind a local unix socket must run on this host's kernel. A socket
// forwarded from a VM or another machine (ssh -L, a VM's forwarded socket under a name the VM
// list does not know) is local, but the containers run under another kernel, whose
// core_pattern and namespaces preflight never read. Through the real binary, against a real
// engine behind a forwarding socket that reports the other kernel a VM would.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, request, type IncomingMessage, type ServerResponse } from 'node:http';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Engine, engineReachable } from '../../src/confine/engine.js';
import { MANIFEST } from './fixtures/session.js';
import { cloakpipeAsync } from '../helpers/cli.js';

const engine = new Engine();
const skip = (await engineReachable()) ? false : `no Docker engine reachable at ${engine.socketPath}: Docker tests skipped`;

/** A socket that forwards each request to the engine; /info answers as an engine in a VM would. */
function forwarder(path: string, seen: string[]): Promise<() => void> {
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    seen.push(`${req.method} ${req.url}`);
    const up = request({ socketPath: engine.socketPath, method: req.method, path: req.url, headers: req.headers }, (r) => {
      if (!/\/info$/.test(req.url ?? '')) return res.writeHead(r.statusCode ?? 502, r.headers), void r.pipe(res);
      let body = '';
      r.setEncoding('utf8');
      r.on('data', (d) => (body += d));
      r.on('end', () => {
        const info = JSON.parse(body) as Record<string, unknown>;
        Object.assign(info, { KernelVersion: '5.15.0-1051-azure', OperatingSystem: 'Ubuntu 22.04.4 LTS', Name: 'build-vm' });
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(info));
      });
    });
    up.on('error', () => res.destroy());
    req.pipe(up);
  });
  return new Promise((resolve) => server.listen(path, () => resolve(() => server.close())));
}

test('an engine on another kernel behind a local socket is refused at preflight, exit 2, before anything else is asked of it', { skip }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'cp-confine-kernel-'));
  const files = { manifest: MANIFEST, policy: 'permit (principal, action, resource);\n', context: JSON.stringify({ task: { id: 'T-1' }, sensitivity: 'confidential' }), aliases: 'notify: send_update\n', input: '{}' };
  const path = (k: string) => join(dir, k);
  for (const [k, v] of Object.entries(files)) writeFileSync(path(k), v);
  const seen: string[] = [];
  const socket = join(dir, 'docker.sock');
  t.after(await forwarder(socket, seen));
  const image = 'sha256:' + 'ab'.repeat(32);
  const flags = Object.keys(files).flatMap((k) => [`--${k}`, path(k)]);
  const env: NodeJS.ProcessEnv = { ...process.env, CLOAKPIPE_DOCKER_SOCKET: socket, CLOAKPIPE_HOME: join(dir, 'home') };
  delete env.DOCKER_HOST;
  const r = await cloakpipeAsync(['confine', '--image', image, ...flags, '--', process.execPath, '-e', ''], env);
  assert.equal(r.status, 2, r.stderr);
  assert.match(r.stderr, /preflight refused: .*the Docker engine runs on another kernel than this host's/, r.stderr);
  assert.deepEqual(seen.filter((s) => !/\/info$/.test(s)), [], 'nothing but /info was asked of the engine');
});
