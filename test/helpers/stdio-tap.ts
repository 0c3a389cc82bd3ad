// A recording wire between a client and a real stdio server, for what a server is sent and what
// it answers (not what the gate makes of it): `node stdio-tap.js COMMAND ARGS…` runs the server
// and appends each line either way to $TAP_FILE as JSON `{ to: 'server' | 'client', line }`.
// Lines pass through unchanged, in order; the tap ends when either side does.
import { spawn } from 'node:child_process';
import { appendFileSync } from 'node:fs';
import { createInterface } from 'node:readline';

const file = process.env.TAP_FILE;
if (!file) throw new Error('TAP_FILE is not set');
const [command, ...args] = process.argv.slice(2);
const server = spawn(command, args, { stdio: ['pipe', 'pipe', 'inherit'] });
const note = (to: 'server' | 'client', line: string) => appendFileSync(file, JSON.stringify({ to, line }) + '\n');

createInterface({ input: process.stdin })
  .on('line', (line) => {
    note('server', line);
    server.stdin!.write(line + '\n');
  })
  .on('close', () => server.stdin!.end());
createInterface({ input: server.stdout! }).on('line', (line) => {
  note('client', line);
  process.stdout.write(line + '\n');
});
server.on('exit', (code) => process.exit(code ?? 1));
process.on('SIGTERM', () => server.kill('SIGTERM'));
