// Flag parsing shared by every command: strict (unknown flags are usage errors, exit 2), with a
// suggestion for a mistyped flag, and the help text drawn from the same table as the parser.
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { parseDuration } from '../util/duration.js';

export class UsageError extends Error {}

/** A duration flag's value (`500ms`, `30s`, `2m`); a bad one is a UsageError naming the flag. */
export function duration(text: string, flag: string): number {
  try {
    return parseDuration(text);
  } catch (e) {
    throw new UsageError(`${flag}: ${(e as Error).message}`);
  }
}

/** Node's timers take at most 2^31 - 1 ms (24.8 days); a longer one fires after 1 ms instead. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/** A duration flag that arms a timer: longer than a timer can wait is a UsageError, not 1 ms. */
export function timerDuration(text: string, flag: string): number {
  const ms = duration(text, flag);
  if (ms > MAX_TIMER_MS) throw new UsageError(`${flag}: at most 596h (a timer cannot wait longer)`);
  return ms;
}

type ParseOptions = NonNullable<ParseArgsConfig['options']>;
type ParseOption = ParseOptions[string];

/** One flag: what `parseArgs` needs, plus what `--help` shows (`arg` names its value). */
export type FlagSpec = ParseOption & { arg?: string; help?: string; defaultText?: string };
export type Options = Record<string, FlagSpec>;

const HELP = { help: { type: 'boolean' } } as const;

/** Damerau–Levenshtein distance (adjacent transpositions count one), for flag suggestions. */
export function editDistance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) d[0][j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.length][b.length];
}

/** The closest candidate when it is close enough to be a typo (or the only one it begins). */
export function suggest(word: string, candidates: Iterable<string>): string | undefined {
  const w = word.toLowerCase();
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const c of candidates) {
    const dist = editDistance(w, c.toLowerCase());
    if (dist < bestDistance) [best, bestDistance] = [c, dist];
  }
  if (best !== undefined && bestDistance <= Math.max(1, Math.floor(Math.max(w.length, best.length) / 3))) return best;
  const prefixed = [...candidates].filter((c) => w.length >= 3 && c.startsWith(w));
  return prefixed.length === 1 ? prefixed[0] : undefined;
}

/** `unknown option --manfest (did you mean --manifest?)` */
export function unknownFlag(flag: string, options: Options): UsageError {
  const name = flag.replace(/^-+/, '').split('=')[0];
  const hit = flag.startsWith('--') ? suggest(name, Object.keys({ ...options, ...HELP })) : undefined;
  return new UsageError(`unknown option ${flag}${hit ? ` (did you mean --${hit}?)` : ''}`);
}

/** What `parseArgs` takes of a command's table: the help fields dropped; `defaults` false drops defaults too. */
function parseConfig(options: Options, defaults = true): ParseOptions {
  const config: ParseOptions = {};
  for (const [name, { arg: _a, help: _h, defaultText: _d, default: dflt, ...spec }] of Object.entries(options)) config[name] = defaults && dflt !== undefined ? { ...spec, default: dflt } : spec;
  return { ...config, ...HELP };
}

/** A parse failure as a usage error: an unknown flag with its suggestion, else Node's message. */
function usageOf(e: unknown, options: Options): UsageError {
  const err = e as NodeJS.ErrnoException;
  const unknown = /^Unknown option '([^']+)'/.exec(err.message);
  if (err.code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' && unknown) return unknownFlag(unknown[1], options);
  return new UsageError(err.message);
}

export function parseFlags<O extends Options>(argv: string[], options: O, allowPositionals = false) {
  try {
    return parseArgs({ args: argv, options: parseConfig(options) as O & typeof HELP, strict: true, allowPositionals });
  } catch (e) {
    throw usageOf(e, options);
  }
}

/**
 * The flags `argv` gives, in order, read exactly as parseFlags reads them for that command (no
 * defaults, `--help` included): what another part of cloakpipe must know of a command line it
 * did not write (wrap, of a gate entry). A UsageError where the command would refuse it; its
 * message names flags only, never an argument (which may hold a key).
 */
export function givenFlags(argv: string[], options: Options): { name: string; value?: string }[] {
  try {
    const { tokens } = parseArgs({ args: argv, options: parseConfig(options, false), strict: true, allowPositionals: false, tokens: true });
    return tokens.flatMap((t) => (t.kind === 'option' ? [{ name: t.name, value: t.value }] : []));
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL') throw new UsageError('an argument that is no flag');
    throw new UsageError(usageOf(e, options).message.split('\n')[0]);
  }
}

/** The options section of a command's help: every flag, its value, what it does, its default. */
export function optionsHelp(options: Options): string {
  const rows = Object.entries(options).map(([name, o]) => {
    const head = `  --${name}${o.type === 'string' ? ` ${o.arg ?? 'VALUE'}` : ''}${o.multiple ? ' (repeatable)' : ''}`;
    const dflt = o.defaultText ?? (o.default !== undefined && o.default !== false ? String(o.default) : undefined);
    return [head, `${o.help ?? ''}${dflt !== undefined ? ` [default: ${dflt}]` : ''}`.trim()] as const;
  });
  const width = Math.min(34, Math.max(...rows.map(([h]) => h.length)) + 2);
  return rows
    .map(([head, text]) => (head.length + 2 > width ? `${head}\n${' '.repeat(width)}${text}` : `${head.padEnd(width)}${text}`))
    .join('\n');
}

export function required<T>(value: T | undefined, flag: string): T {
  if (value === undefined || value === '') throw new UsageError(`missing required ${flag}`);
  return value;
}
