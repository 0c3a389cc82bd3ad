// The real public-log fixtures (copied from shared/fixtures/public-log: Sigstore's Rekor v1 log,
// timestamp.sigstore.dev, GitHub's TSA, freetsa.org). Located from the source tree so compiled
// tests find them without a copy step.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

// dist/test/helpers -> repo root
export const REPO_ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
export const PUBLIC_LOG = join(REPO_ROOT, 'test', 'ledger', 'fixtures', 'public-log');

export const fixturePath = (name: string): string => join(PUBLIC_LOG, name);
export const fixtureText = (name: string): string => readFileSync(fixturePath(name), 'utf8');
/** A JSON fixture, parsed (a Rekor entry a test may change). */
export const fixtureJson = (name: string): Record<string, any> => JSON.parse(fixtureText(name));
export const fixtureBytes = (name: string): Buffer => readFileSync(fixturePath(name));

export const REKOR_ENTRIES = [1, 2, 3, 4].map((i) => `rekor-entry-${i}.json`);
/** Rekor v2 (tlog-tiles) entries of Sigstore's staging log2025-alpha1, and that log's Ed25519 key. */
export const REKOR_V2_ENTRIES = ['rekor-v2-entry-1.json'];
export const REKOR_V2_KEY = 'rekor-v2-log2025-alpha1-sigstage.pem';
export const TSA_TOKENS = [1, 2, 3].map((i) => ({
  token: `tsa-token-${i}.der`,
  chain: `tsa-chain-${i}.pem`,
  meta: JSON.parse(fixtureText(`tsa-token-${i}.json`)) as { hashAlgorithm: string; messageImprintHex: string; genTime: string },
}));

export const CLI = join(REPO_ROOT, 'dist', 'src', 'cli', 'main.js');
