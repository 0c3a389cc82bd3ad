// Flag parsing shared by every command: strict (unknown flags are usage errors, exit 2).
import { parseArgs, type ParseArgsConfig } from 'node:util';

export class UsageError extends Error {}

export type Options = NonNullable<ParseArgsConfig['options']>;

const HELP = { help: { type: 'boolean' } } as const;

export function parseFlags<O extends Options>(argv: string[], options: O, allowPositionals = false) {
  try {
    return parseArgs({ args: argv, options: { ...options, ...HELP } as O & typeof HELP, strict: true, allowPositionals });
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
}

export function required<T>(value: T | undefined, flag: string): T {
  if (value === undefined || value === '') throw new UsageError(`missing required ${flag}`);
  return value;
}
