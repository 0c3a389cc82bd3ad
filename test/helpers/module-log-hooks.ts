// Module customization hooks (see module-log-preload.ts): every module loaded, one URL a line.
import { appendFileSync } from 'node:fs';

type Next = (url: string, context: unknown) => Promise<unknown>;

export async function load(url: string, context: unknown, next: Next): Promise<unknown> {
  const out = process.env.CLOAKPIPE_TEST_MODULES;
  if (out) appendFileSync(out, url + '\n');
  return next(url, context);
}
