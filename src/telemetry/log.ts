// Structured logs on stderr: one JSON object per line, {"ts","level","event",...fields}.
// Fields pass the allow-list in fields.ts (codes, digests, ids, counts, declared names), so no
// argument value, result or model-chosen text reaches a log line. A sink that fails is counted,
// never reported with its exception text or the payload it was given: the log must not become
// the leak it exists to avoid.
import { eventName, sanitize, type Fields } from './fields.js';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
export type LogSink = (line: string) => void;

const LEVELS: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

let threshold: number = LEVELS.info;
let sink: LogSink | null = null;
let failures = 0;
let stderrGuarded = false;

/** How long an info or debug line may wait for others before stderr is written (issue 16). */
export const LOG_FLUSH_MS = 5;
const LOG_FLUSH_BYTES = 64 * 1024;
let held: string[] = [];
let heldBytes = 0;
let flushTimer: ReturnType<typeof setTimeout> | null = null;

// Info and debug lines wait up to LOG_FLUSH_MS and leave in one write: a write to stderr is a
// system call that wakes its reader, which on some VMs costs more than deciding a call, and a
// line written after each answer delayed the host's next call behind it. Each line keeps the
// time it was made. A warning or an error leaves at once, after the lines held before it. The
// lines still held when the process exits are written then (the write to a pipe or file is
// synchronous); a SIGKILL loses at most the last LOG_FLUSH_MS of info lines, never evidence
// (the ledger is written before any call goes on).
function stderrSink(line: string, urgent: boolean): void {
  if (!stderrGuarded) {
    stderrGuarded = true;
    // An asynchronous write error (EPIPE after the host closed stderr) is counted, not thrown.
    process.stderr.on('error', () => void failures++);
    process.on('exit', flushLog);
  }
  held.push(line);
  heldBytes += line.length;
  if (urgent || heldBytes >= LOG_FLUSH_BYTES) return flushLog();
  if (flushTimer === null) {
    flushTimer = setTimeout(flushLog, LOG_FLUSH_MS);
    flushTimer.unref(); // held lines never keep a process alive: exit writes them
  }
}

/** Write the lines held for stderr now. */
function flushLog(): void {
  if (flushTimer !== null) clearTimeout(flushTimer);
  flushTimer = null;
  if (held.length === 0) return;
  const text = held.join('');
  held = [];
  heldBytes = 0;
  try {
    process.stderr.write(text);
  } catch {
    failures++;
  }
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
    const r: unknown = sink ? sink(line) : stderrSink(line, LEVELS[level] >= LEVELS.warn);
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
