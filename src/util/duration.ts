// Durations as the CLI writes them: 500ms, 30s, 10m, 1h.
const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

export function parseDuration(text: string): number {
  const m = /^([0-9]{1,9})(ms|s|m|h)$/.exec(text);
  if (!m) throw new Error(`invalid duration "${text}" (expected e.g. 500ms, 30s, 10m, 1h)`);
  const ms = Number(m[1]) * UNITS[m[2]];
  if (ms <= 0) throw new Error(`duration must be positive: "${text}"`);
  return ms;
}

/** A duration for a person, in the CLI's units, rounded down: 0s, 42s, 17m 5s, 3h 20m, 30d 4h. */
export function formatDuration(ms: number): string {
  const s = Math.floor(Math.max(0, ms) / 1000);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${s % 60}s`;
  if (s < 86_400) return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`;
  return `${Math.floor(s / 86_400)}d ${Math.floor((s % 86_400) / 3600)}h`;
}
