// A real headless browser for page tests: Debian's chromium driven by puppeteer-core, which
// never downloads a browser of its own. CHROMIUM overrides the path. In CI (CI=true) a missing
// chromium fails the suite; elsewhere the browser tests skip, loudly.
import { existsSync } from 'node:fs';
import puppeteer, { type Browser } from 'puppeteer-core';

export const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
const present = existsSync(CHROMIUM);

if (!present) {
  if (process.env.CI === 'true') throw new Error(`no chromium at ${CHROMIUM}: in CI the browser tests must run (apt-get install chromium)`);
  process.stderr.write(`\n#### WARNING: no chromium at ${CHROMIUM}: browser tests SKIP (apt-get install chromium) ####\n\n`);
}

/** `{ skip }` for node:test when there is no chromium (never in CI). */
export const browserSkip = present ? {} : { skip: `no chromium at ${CHROMIUM}` };

/** `args`: more chromium switches (a certificate to trust, by its key's SPKI digest). */
export function launchBrowser(args: string[] = []): Promise<Browser> {
  return puppeteer.launch({
    executablePath: CHROMIUM,
    headless: true,
    // Chromium's sandbox refuses to run as root (CI runs as root); the page is our own.
    args: [...(process.getuid?.() === 0 ? ['--no-sandbox'] : []), '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run', ...args],
  });
}
