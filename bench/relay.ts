// The pass-through relay: the floor for any stdio proxy. It spawns the upstream and copies
// whole lines both ways (host → upstream, upstream → host), nothing else: no parsing, no
// checks, no ledger. Usage: node dist/bench/relay.js -- COMMAND [ARGS...]
import { spawn } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';

const dash = process.argv.indexOf('--');
const argv = dash >= 0 ? process.argv.slice(dash + 1) : process.argv.slice(2);
if (argv.length === 0) {
  process.stderr.write('usage: relay.js -- COMMAND [ARGS...]\n');
  process.exit(2);
}
const child = spawn(argv[0], argv.slice(1), { stdio: ['pipe', 'pipe', 'inherit'] });

/** Copy complete lines from `from` to `to`; a partial line waits for its newline. */
function copyLines(from: Readable, to: Writable) {
  let pending: Buffer[] = [];
  from.on('data', (chunk: Buffer) => {
    const last = chunk.lastIndexOf(0x0a);
    if (last < 0) return void pending.push(chunk);
    const head = chunk.subarray(0, last + 1);
    to.write(pending.length ? Buffer.concat([...pending, head]) : head);
    pending = last + 1 < chunk.length ? [chunk.subarray(last + 1)] : [];
  });
}

copyLines(process.stdin, child.stdin!);
copyLines(child.stdout!, process.stdout);
child.stdin!.on('error', () => undefined);
process.stdin.on('end', () => child.stdin!.end());
child.on('exit', (code) => process.exit(code ?? 1));
