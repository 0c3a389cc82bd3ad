// What reading a string as a model reads it costs a classify scan (src/flow/readable.ts, ADR
// 113), per KiB of text of each kind, beside one classify rule's scan of the same text (the
// baseline, measured in the same run): ASCII never reaches the fold; text without Greek or
// Cyrillic pays one regex test; Greek and Cyrillic text pays the fold and is then read twice.
import { readable } from '../src/flow/readable.js';
import { compilePattern } from '../src/contract/pattern.js';
import { flags, isMain, machine, section, table } from './lib.js';

const KIB = 1024;
/** A flat string of `unit` repeated to 1 KiB (parsed, as a result's strings are). */
const kib = (unit: string) => JSON.parse(JSON.stringify(unit.repeat(Math.ceil(KIB / unit.length)).slice(0, KIB))) as string;

const TEXTS: [string, string][] = [
  ['ASCII', kib('The quick brown fox jumps over the lazy dog. ')],
  ['Latin with accents', kib('Le café où naïve Zoë déjeune à midi. ')],
  ['Russian', kib('Съешь же ещё этих мягких французских булок, да выпей чаю. ')],
  ['Greek', kib('Ξεσκεπάζω την ψυχοφθόρα βδελυγμία. ')],
];

/** Mean µs of `fn` over `n` runs after `warmup`. */
function micros(fn: () => unknown, n: number, warmup: number): number {
  for (let i = 0; i < warmup; i++) fn();
  const t = process.hrtime.bigint();
  for (let i = 0; i < n; i++) fn();
  return Number(process.hrtime.bigint() - t) / n / 1000;
}

export async function main() {
  const f = flags({}, { n: 20000, warmup: 2000 });
  const rule = compilePattern('ACCT-[0-9]{8}');
  const rows = TEXTS.map(([name, text]) => {
    const fold = micros(() => readable(text), f.n, f.warmup);
    const scan = micros(() => rule.find(text), f.n, f.warmup);
    return { name, fold, scan, twice: readable(text) !== null };
  });
  if (f.json) return void process.stdout.write(JSON.stringify({ machine: machine(), rows }) + '\n');
  section(
    `Readable: the model's reading of 1 KiB of text, ${f.n} runs each`,
    `${machine()}\n\n${table(
      ['text', 'readable() µs', "one rule's scan µs (baseline)", 'ratio', 'rules read it twice'],
      rows.map((r) => [r.name, r.fold.toFixed(2), r.scan.toFixed(2), (r.fold / r.scan).toFixed(2), r.twice ? 'yes' : 'no']),
    )}\n\nEach rule also scans the readable form when it differs from the text (the last column), and its length counts against the scan limit.`,
  );
}

if (isMain(import.meta.url)) await main();
