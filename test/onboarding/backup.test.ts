// wrap's and unwrap's copies of a host config: two taken in the same millisecond are two files,
// each with the text it was given, 0600; neither replaces the other.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { backup } from '../../src/onboarding/backup.js';

test('backup: copies taken at one instant keep their own names and texts', () => {
  const home = mkdtempSync(join(tmpdir(), 'cp-backup-'));
  const at = new Date('2026-12-04T03:00:00.123Z');
  const texts = ['{"original": true}', '{"wrapped": true}', '{"unwrapped": true}'];
  const files = texts.map((t) => backup(home, '/home/u/.claude.json', t, at));
  assert.equal(new Set(files).size, 3);
  assert.deepEqual(files.map((f) => readFileSync(f, 'utf8')), texts);
  assert.equal(readdirSync(join(home, 'backups')).length, 3, 'no temporary file left');
  for (const f of files) {
    assert.match(f, /home_u_.claude.json\.2026-12-04T03-00-00-123Z(\.\d)?$/);
    assert.equal(statSync(f).mode & 0o777, 0o600);
  }
});
