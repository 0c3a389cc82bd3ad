// Durations as the CLI writes them: 500ms, 30s, 10m, 1h.
const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

export function parseDuration(text: string): number {
  const m = /^([0-9]{1,9})(ms|s|m|h)$/.exec(text);
  if (!m) throw new Error(`invalid duration "${text}" (expected e.g. 500ms, 30s, 10m, 1h)`);
  const ms = Number(m[1]) * UNITS[m[2]];
  if (ms <= 0) throw new Error(`duration must be positive: "${text}"`);
  return ms;
}
