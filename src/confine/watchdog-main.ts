// Entry point of the watchdog process (see watchdog.ts). argv: the container's name. fd 3: the
// bridge. It never reads or writes anything but heartbeat sequence numbers, and logs nothing.
import net from 'node:net';
import { Engine } from './engine.js';
import { CONTAINER_NAME } from './profile.js';
import { CLEANUP_TRY_MS, LEASE_MS, killAndRemove } from './watchdog.js';

const id = process.argv[2] ?? '';
if (!CONTAINER_NAME.test(id)) process.exit(2);

const engine = new Engine({ timeoutMs: CLEANUP_TRY_MS });
let lease = Date.now() + LEASE_MS;
let cleaning = false;

async function cleanup(): Promise<void> {
  if (cleaning) return;
  cleaning = true;
  const ok = await killAndRemove(engine, id);
  // A create the bridge sent just before it died can land after that first look: look again.
  await new Promise((r) => setTimeout(r, LEASE_MS));
  process.exit(ok && (await killAndRemove(engine, id)) ? 0 : 1);
}

process.on('SIGINT', () => undefined);
process.on('SIGHUP', () => undefined);
process.on('SIGTERM', () => void cleanup());
process.on('uncaughtException', () => void cleanup());

const pipe = new net.Socket({ fd: 3, readable: true, writable: true });
let buf = '';
pipe.on('data', (d: Buffer) => {
  buf += d.toString('latin1');
  if (buf.length > 4096) return void cleanup();
  let nl;
  while ((nl = buf.indexOf('\n')) !== -1) {
    const line = buf.slice(0, nl);
    buf = buf.slice(nl + 1);
    if (!/^h[0-9]{1,15}$/.test(line)) return void cleanup();
    lease = Date.now() + LEASE_MS;
    pipe.write(`a${line.slice(1)}\n`);
  }
});
pipe.on('end', () => void cleanup());
pipe.on('close', () => void cleanup());
pipe.on('error', () => void cleanup());
setInterval(() => {
  if (Date.now() > lease) void cleanup();
}, 100);
pipe.write('r\n');
