// ledger export, prove and checkpoint write --out whole: to a temporary file in the target's
// folder, renamed over it. A folder that does not exist (or is not a folder) is a usage error
// naming the --out path and that folder, with nothing left behind; an error named only the
// temporary file (`ENOENT ... open '/dir/.out.jsonl.3f2a….tmp'`), a file the user never named.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cloakpipe, makeHome, tempDir } from '../helpers/cli.js';
import { session } from './session.js';

test('--out in a folder that does not exist, or under a file, is a usage error naming it; --out a folder too', async () => {
  const h = makeHome();
  await session(h);
  assert.equal(cloakpipe(['ledger', 'anchor', '--home', h]).status, 0, 'an epoch to prove');
  const dir = tempDir();
  writeFileSync(join(dir, 'a-file'), 'x');
  mkdirSync(join(dir, 'a-folder'));
  const before = readdirSync(dir).sort();
  const cases: [string[], string, RegExp][] = [
    [['ledger', 'export', '--home', h], join(dir, 'missing', 'out.jsonl'), /its folder does not exist \(ENOENT\); it is written to a temporary file in \S+missing and renamed/],
    [['ledger', 'export', '--home', h], join(dir, 'a-file', 'out.jsonl'), /a part of its path is not a folder \(ENOTDIR\)/],
    [['ledger', 'export', '--home', h], join(dir, 'a-folder'), /it is a folder; give a file path/],
    [['ledger', 'prove', '0', '--home', h], join(dir, 'missing', 'proof.json'), /its folder does not exist/],
    [['ledger', 'checkpoint', '--home', h], join(dir, 'missing', 'cp.txt'), /its folder does not exist/],
  ];
  for (const [args, out, why] of cases) {
    const r = cloakpipe([...args, '--out', out]);
    assert.equal(r.status, 2, `${args[1]} ${out}: ${r.stdout}${r.stderr}`);
    assert.match(r.stderr, new RegExp(`^cloakpipe ledger: --out ${out.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}: `), r.stderr);
    assert.match(r.stderr, why);
    assert.doesNotMatch(r.stderr, /\.tmp/, 'the temporary file is not what the user named');
  }
  assert.deepEqual(readdirSync(dir).sort(), before, 'nothing left behind');
  assert.deepEqual(readdirSync(join(dir, 'a-folder')), []);
});
