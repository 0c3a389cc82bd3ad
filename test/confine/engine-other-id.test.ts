// An engine answer naming another container: create answered with the id of a container the
// session did not make (an engine, or a socket in front of it, that mixes up its answers). The
// session went by that id: it admitted that container and then killed and removed it, a
// bystander of the host's, while its own stayed. Now the container is the one of the session's
// name, and an answer that is not its id refuses the session. Through the real binary, a real
// engine behind a socket that rewrites create's answer, a real bystander container.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createServer, request, type IncomingMessage, type ServerResponse } from 'node:http';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Engine, engineReachable } from '../../src/confine/engine.js';
import { confineUpstream, MANIFEST } from './fixtures/session.js';
import { cloakpipeAsync, makeHome, tempDir } from '../helpers/cli.js';

const ROOT = resolve(fileURLToPath(new URL('.', import.meta.url)), '../../..');
const engine = new Engine();
const skip = (await engineReachable()) ? false : `no Docker engine reachable at ${engine.socketPath}: Docker tests skipped`;
if (skip && process.env.CI === 'true') throw new Error(`confine: ${skip} (CI=true: failing, not skipping)`);

/** A socket in front of the engine whose answer to create names `other` instead of the container made. */
function mixingUp(path: string, other: string, made: string[]): Promise<() => void> {
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const up = request({ socketPath: engine.socketPath, method: req.method, path: req.url, headers: req.headers }, (r) => {
      if (!(req.method === 'POST' && /\/containers\/create/.test(req.url ?? ''))) return res.writeHead(r.statusCode ?? 502, r.headers), void r.pipe(res);
      let body = '';
      r.setEncoding('utf8');
      r.on('data', (d) => (body += d));
      r.on('end', () => {
        made.push((JSON.parse(body) as { Id: string }).Id);
        res.writeHead(r.statusCode ?? 502, { 'content-type': 'application/json' }).end(JSON.stringify({ Id: other, Warnings: [] }));
      });
    });
    up.on('error', () => res.destroy());
    req.pipe(up);
  });
  return new Promise((done) => server.listen(path, () => done(() => server.close())));
}

const exists = (id: string) => {
  try {
    execFileSync('docker', ['inspect', '--type', 'container', id], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
};

test("create answered with another container's id: the session is refused, that container is untouched, the session's own is removed", { skip, timeout: 180_000 }, async (t) => {
  const image = execFileSync(process.execPath, [join(ROOT, 'confine/image/build.mjs')], { encoding: 'utf8' }).trim();
  const bystander = execFileSync('docker', ['create', '--network', 'none', '--name', `cp-bystander-${randomBytes(6).toString('hex')}`, image], { encoding: 'utf8' }).trim();
  t.after(() => void execFileSync('docker', ['rm', '-f', bystander], { stdio: 'ignore' }));
  const dir = tempDir('cp-confine-other-id-');
  const files = { manifest: MANIFEST, policy: 'permit (principal, action, resource);\n', context: JSON.stringify({ task: { id: 'T-1' }, sensitivity: 'confidential' }), aliases: 'notify: send_update\n', input: '{}' };
  for (const [k, v] of Object.entries(files)) writeFileSync(join(dir, k), v);
  const socket = join(dir, 'docker.sock');
  const made: string[] = [];
  t.after(await mixingUp(socket, bystander, made));
  const up = confineUpstream(join(dir, 'record.jsonl'));
  const env: NodeJS.ProcessEnv = { ...up.env, CLOAKPIPE_DOCKER_SOCKET: socket, CLOAKPIPE_HOME: makeHome() };
  delete env.DOCKER_HOST;
  const flags = Object.keys(files).flatMap((k) => [`--${k}`, join(dir, k)]);
  const r = await cloakpipeAsync(['confine', '--image', image, ...flags, '--json', '--', up.command, ...up.args], env);
  assert.equal(r.status, 2, `${r.stderr}${r.stdout}`);
  assert.ok(r.stdout.trim() !== '', r.stderr);
  assert.ok(exists(bystander), 'the bystander container is still there');
  const summary = JSON.parse(r.stdout) as { ended: string; reason: string; removed: boolean };
  assert.equal(summary.ended, 'refused');
  assert.equal(summary.reason, 'create_failed');
  assert.equal(made.length, 1);
  assert.ok(summary.removed && !exists(made[0]), "the session's own container is removed");
});
