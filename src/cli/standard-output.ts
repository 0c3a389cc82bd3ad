// A command's standard output that fails under it. A reader that stops early (`cloakpipe ledger
// show | head`) does not want the rest, and that is no failure of the command: it ends without a
// word, exit 141, as a program SIGPIPE ends (Node ignores SIGPIPE, and the EPIPE nobody heard
// printed a stack trace, exit 1). Any other failure (a full disk under `> file`) is one: exit 2,
// said on stderr. mcp-proxy's standard output is its host's channel: its door handles that.
import { writeSync } from 'node:fs';
import { failureOf, watchFailures } from '../util/out/stream-failure.js';

export const READER_LEFT = 141;

let settled = false;

/** The exit code for output that could not be written, said on stderr unless its reader left. */
export function outputFailed(cause: Error | undefined, what = 'standard output'): number {
  settled = true;
  if ((cause as NodeJS.ErrnoException | undefined)?.code === 'EPIPE') return READER_LEFT;
  try {
    writeSync(2, `cloakpipe: cannot write ${what}: ${cause?.message ?? 'closed'}\n`);
  } catch {
    // stderr is what failed
  }
  return 2;
}

/** Before a command runs: a failure of stdout decides the exit code, whatever the command returned. */
export function watchStandardOutput(): void {
  watchFailures(process.stdout);
  process.on('exit', () => {
    const failed = failureOf(process.stdout);
    if (failed === null || settled) return;
    const code = outputFailed(failed);
    if (!process.exitCode) process.exitCode = code; // a failed check keeps its own code
  });
}
