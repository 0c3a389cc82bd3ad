// Structured logs on stderr: one JSON object per line, {"ts","level","event",...fields}.
// Fields pass the allow-list in fields.ts (codes, digests, ids, counts, declared names), so no
// argument value, result or model-chosen text reaches a log line. A sink that fails is counted,
// never reported with its exception text or the payload it was given: the log must not become
// the leak it exists to avoid.
import { eventName, sanitize, type Fields } from './fields.js';
import { writeBatched } from '../util/batched-write.js';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
export type LogSink = (line: string) => void;

const LEVELS: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

let threshold: number = LEVELS.info;
let sink: LogSink | null = null;
let failures = 0;
let stderrGuarded = false;

function stderrSink(line: string): void {
  if (!stderrGuarded) {
    stderrGuarded = true;
    // An asynchronous write error (EPIPE after the host closed stderr) is counted, not thrown.
    process.stderr.on('error', () => void failures++);
  }
  writeBatched(process.stderr, line); // the lines of one turn (a group's decisions) in one write
}

/** Where lines go; null restores stderr. */
export function setLogSink(s: LogSink | null): void {
  sink = s;
}

export function setLogLevel(level: LogLevel): void {
  if (Object.prototype.hasOwnProperty.call(LEVELS, level)) threshold = LEVELS[level];
}

/** How many lines could not be written (the failures themselves are never described). */
export function logFailures(): number {
  return failures;
}

function emit(level: LogLevel, event: string, fields: Fields = {}): void {
  try {
    if (LEVELS[level] < threshold) return;
    const line = JSON.stringify({ ts: new Date().toISOString(), level, event: eventName(event), ...sanitize(fields) }) + '\n';
    const r: unknown = (sink ?? stderrSink)(line);
    // An asynchronous sink's rejection is counted too, never left to print itself.
    if (r !== null && typeof r === 'object' && typeof (r as PromiseLike<unknown>).then === 'function')
      (r as PromiseLike<unknown>).then(undefined, () => void failures++);
  } catch {
    failures++; // deliberately nothing else: not the exception, not the line
  }
}

export const log = {
  debug: (event: string, fields?: Fields) => emit('debug', event, fields),
  info: (event: string, fields?: Fields) => emit('info', event, fields),
  warn: (event: string, fields?: Fields) => emit('warn', event, fields),
  error: (event: string, fields?: Fields) => emit('error', event, fields),
};
