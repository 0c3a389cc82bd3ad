// nst/JSONTestSuite, read byte for byte from the shared fixtures beside the repository
// (`../shared/fixtures/jsontestsuite`), where a fresh clone in CI finds them too.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from './cli.js';

export const SUITE = join(ROOT, '../shared/fixtures/jsontestsuite');

export interface SuiteFile {
  name: string;
  bytes: Buffer;
}

/** Every file of one corpus (`test_parsing` or `test_transform`), sorted by name. */
export function corpus(which: 'test_parsing' | 'test_transform'): SuiteFile[] {
  const dir = join(SUITE, which);
  // Missing fixtures are a failure, never a skip: green must mean the corpus ran.
  if (!existsSync(dir)) throw new Error(`JSONTestSuite corpus not found at ${dir}`);
  return readdirSync(dir)
    .filter((n) => n.endsWith('.json'))
    .sort()
    .map((name) => ({ name, bytes: readFileSync(join(dir, name)) }));
}

export function suiteFile(which: 'test_parsing' | 'test_transform', name: string): Buffer {
  return readFileSync(join(SUITE, which, name));
}
