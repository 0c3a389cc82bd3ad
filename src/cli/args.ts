// Flag parsing shared by every command: strict (unknown flags are usage errors, exit 2).
import { parseArgs, type ParseArgsConfig } from 'node:util';

export class UsageError extends Error {}

export type Options = NonNullable<ParseArgsConfig['options']>;

export function parseFlags(argv: string[], options: Options, allowPositionals = false) {
  try {
    return parseArgs({ args: argv, options: { ...options, help: { type: 'boolean' } }, strict: true, allowPositionals });
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
}

export function required<T>(value: T | undefined, flag: string): T {
  if (value === undefined || value === '') throw new UsageError(`missing required ${flag}`);
  return value;
}
