// The pass-through relay: the floor for any stdio proxy. It spawns the upstream and copies
// whole lines both ways (host → upstream, upstream → host), nothing else: no parsing, no
// checks, no ledger. Usage: node dist/bench/relay.js -- COMMAND [ARGS...]
import { spawn } from 'node:child_process';
import { copyLines } from './lines.js';

const dash = process.argv.indexOf('--');
const argv = dash >= 0 ? process.argv.slice(dash + 1) : process.argv.slice(2);
if (argv.length === 0) {
  process.stderr.write('usage: relay.js -- COMMAND [ARGS...]\n');
  process.exit(2);
}
const child = spawn(argv[0], argv.slice(1), { stdio: ['pipe', 'pipe', 'inherit'] });

copyLines(process.stdin, child.stdin!);
copyLines(child.stdout!, process.stdout);
child.stdin!.on('error', () => undefined);
process.stdin.on('end', () => child.stdin!.end());
child.on('exit', (code) => process.exit(code ?? 1));
