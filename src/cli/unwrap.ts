// cloakpipe unwrap: src/cli/wrap.ts with unwrap set.
import { run as wrap } from './wrap.js';

export const run = (argv: string[]): Promise<number> => wrap(argv, true);
