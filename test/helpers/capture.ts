// Capture everything this process writes to stderr/stdout and via console, for canary checks.
export interface Captured {
  text(): string;
  /** Each stderr write as it was made (a test of how lines are batched counts them). */
  stderrWrites: string[];
  restore(): void;
}

export function captureOutput(): Captured {
  const chunks: string[] = [];
  const stderrWrites: string[] = [];
  const errWrite = process.stderr.write.bind(process.stderr);
  const outWrite = process.stdout.write.bind(process.stdout);
  const grab = (c: unknown) => {
    chunks.push(typeof c === 'string' ? c : Buffer.from(c as Uint8Array).toString('utf8'));
    return true;
  };
  const consoleFns = ['log', 'error', 'warn', 'info', 'debug'] as const;
  const saved = consoleFns.map((k) => console[k]);
  process.stderr.write = ((c: unknown) => (stderrWrites.push(typeof c === 'string' ? c : Buffer.from(c as Uint8Array).toString('utf8')), grab(c))) as typeof process.stderr.write;
  // stdout carries the test runner's own TAP stream: record it but still pass it through.
  process.stdout.write = ((c: unknown, ...rest: unknown[]) => (grab(c), (outWrite as (...a: unknown[]) => boolean)(c, ...rest))) as typeof process.stdout.write;
  for (const k of consoleFns) console[k] = (...a: unknown[]) => void chunks.push(a.map(String).join(' '));
  return {
    text: () => chunks.join(''),
    stderrWrites,
    restore() {
      process.stderr.write = errWrite as typeof process.stderr.write;
      process.stdout.write = outWrite as typeof process.stdout.write;
      consoleFns.forEach((k, i) => (console[k] = saved[i]));
    },
  };
}

export function canary(tag: string): string {
  return `CANARY-${tag}-${Math.random().toString(36).slice(2, 10)}`;
}
