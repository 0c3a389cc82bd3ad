// `cloakpipe inbox serve` as a child process for tests: started on a free loopback port with a
// login token file (or with none: the token it prints), its address read from what it prints.
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { CLI, tempDir } from './cli.js';
import { setup, startGate, type RunningGate, type Setup } from './recording-gate.js';

export interface RunningInbox {
  url: string;
  token: string;
  /** The login link it printed (no --auth-token-file), else null. */
  loginLink: string | null;
  stderr(): string;
  stop(): Promise<void>;
  pid: number;
  /** Resolves when the process has exited, however. */
  exited: Promise<void>;
}

/**
 * `listen` defaults to a free loopback port (null: no --listen, the default); the URL returned
 * always reaches it over 127.0.0.1. `printedToken`: no --auth-token-file, the token is the one
 * in the login link it prints. `env` is added to this process's.
 */
export async function startInbox(o: {
  home: string;
  approverKey: string;
  flags?: string[];
  listen?: string | null;
  printedToken?: boolean;
  env?: Record<string, string | undefined>;
}): Promise<RunningInbox> {
  let token = randomBytes(24).toString('base64url');
  const tokenFlags: string[] = [];
  if (!o.printedToken) {
    const tokenFile = join(tempDir('cloakpipe-inbox-'), 'token');
    writeFileSync(tokenFile, token + '\n', { mode: 0o600 });
    tokenFlags.push('--auth-token-file', tokenFile);
  }
  const listen = o.listen === null ? [] : ['--listen', o.listen ?? '127.0.0.1:0'];
  const child: ChildProcess = spawn(process.execPath, [CLI, 'inbox', 'serve', '--approver-key', o.approverKey, '--home', o.home, ...listen, ...tokenFlags, ...(o.flags ?? [])], {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...process.env, ...(o.env ?? {}) },
  });
  let err = '';
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  const url = await new Promise<string>((resolve, reject) => {
    const t = setTimeout(() => (child.kill('SIGKILL'), reject(new Error(`inbox did not start:\n${err}`))), 15_000);
    const look = () => {
      const m = /serving (https?):\/\/\S+?:(\d+)\//.exec(err);
      if (m && (!o.printedToken || /log in at \S+ /.test(err))) {
        clearTimeout(t);
        resolve(`${m[1]}://127.0.0.1:${m[2]}`);
      }
    };
    child.stderr!.on('data', look);
    child.on('exit', (code) => {
      clearTimeout(t);
      reject(new Error(`inbox exited ${code}:\n${err}`));
    });
  });
  const link = o.printedToken ? /log in at (\S+)/.exec(err)![1] : null;
  if (link) token = decodeURIComponent(/[#?]token=(.+)$/.exec(link)![1]); // the test says which
  return {
    url,
    token,
    loginLink: link,
    stderr: () => err,
    pid: child.pid!,
    exited,
    stop: () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      return exited;
    },
  };
}

/** A login as the page does it: the session cookie, and the API token (the CSRF token) the answer holds. */
export async function inboxLogin(i: RunningInbox): Promise<{ cookie: string; csrf: string }> {
  const login = await fetch(`${i.url}/login`, { method: 'POST', body: new URLSearchParams({ token: i.token }), redirect: 'manual' });
  if (login.status !== 200) throw new Error(`login: ${login.status} ${await login.text()}`);
  const cookie = login.headers.get('set-cookie')!.split(';')[0];
  const { csrf } = (await login.json()) as { csrf: string };
  return { cookie, csrf };
}

/** A logged-in HTTP client of the inbox (no browser): the session cookie and its API token. */
export async function inboxClient(i: RunningInbox): Promise<(path: string, method?: string) => Promise<{ status: number; body: string }>> {
  const { cookie, csrf } = await inboxLogin(i);
  return async (path, method = 'GET') => {
    const r = await fetch(`${i.url}${path}`, { method, headers: { cookie, 'x-csrf-token': csrf } });
    return { status: r.status, body: await r.text() };
  };
}

/** Every route of the inbox's API that reads a request or decides one, for request `id`. */
export function apiRoutes(id: string): [string, string][] {
  return [
    ['GET', '/api/session'],
    ['GET', '/api/requests'],
    ['GET', `/api/requests/${id}`],
    ['GET', '/api/events'],
    ['POST', `/api/requests/${id}/approve`],
    ['POST', `/api/requests/${id}/deny`],
  ];
}

/** A home with a gate in front of the recording upstream and an inbox on that home (`flags`: the inbox's). */
export async function openGateWithInbox(flags: string[] = []): Promise<{ s: Setup; g: RunningGate; inbox: RunningInbox }> {
  const s = setup();
  const g = await startGate(s);
  return { s, g, inbox: await startInbox({ home: s.home, approverKey: s.approverKey, flags }) };
}

/** Stops what openGateWithInbox started (either may be missing: its start failed). */
export async function closeGateWithInbox(g: RunningGate | undefined, inbox: RunningInbox | undefined): Promise<void> {
  await inbox?.stop();
  await g?.close();
}
