// One token key, two homes (ADR 106). Two gates signing with one key keep two ledgers no key
// tells apart: an entry's signature does not name its gate, so one gate's chain verifies as the
// other's. In a fleet's store the registered keys are known: init refuses a key registered
// under another gate id, exit 2, named, and leaves no home. A home of its own cannot see other
// homes: init says the key was already in the token, and what sharing it costs. Before, both
// were taken silently. The real binary, real SoftHSM and PostgreSQL.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { cloakpipe, tempDir } from '../helpers/cli.js';
import { freshToken, hsmSkip } from '../helpers/softhsm.js';
import { pgSkip } from '../store/postgres/pg.js';
import { freshDatabase, sql } from '../helpers/fleet.js';

const SHARED = /already in the token: a key for one home only; another home signing with it would keep a ledger no one can tell from this one's by its key/;

test('embedded homes: the second init on one token key says it was already there and what sharing it costs', hsmSkip, () => {
  const t = freshToken();
  const env = { ...process.env, ...t.env, CLOAKPIPE_PKCS11_PIN: t.pin };
  const first = cloakpipe(['init', '--home', join(tempDir(), 'a'), '--key', t.uri()], { env });
  assert.equal(first.status, 0, first.stderr);
  assert.doesNotMatch(first.stderr, SHARED, 'a key this init generated is this home\'s');
  const second = cloakpipe(['init', '--home', join(tempDir(), 'b'), '--key', t.uri()], { env });
  assert.equal(second.status, 0, second.stderr);
  assert.match(second.stderr, SHARED);
  assert.ok(!(second.stdout + second.stderr).includes(t.pin));
});

test('a fleet: init --gate-id b with the key gate a registered is exit 2, named, no home left; the same gate again migrates', { ...hsmSkip, ...pgSkip }, async () => {
  const t = freshToken();
  const env = { ...process.env, ...t.env, CLOAKPIPE_PKCS11_PIN: t.pin };
  const url = await freshDatabase();
  const a = join(tempDir(), 'a');
  const first = cloakpipe(['init', '--home', a, '--store', url, '--gate-id', 'gate-a', '--key', t.uri()], { env });
  assert.equal(first.status, 0, first.stderr);
  const b = join(tempDir(), 'b');
  const second = cloakpipe(['init', '--home', b, '--store', url, '--gate-id', 'gate-b', '--key', t.uri()], { env });
  assert.equal(second.status, 2, second.stderr);
  assert.match(second.stderr, /the gate key .* is gate "gate-a"'s already in this store: each gate signs with a key of its own/);
  assert.equal(existsSync(b), false, 'no half-made home is left');
  assert.deepEqual((await sql(url, 'SELECT gate_id FROM cloakpipe.gates ORDER BY gate_id')).map((r) => r.gate_id), ['gate-a']);
  const again = cloakpipe(['init', '--home', a, '--store', url, '--gate-id', 'gate-a', '--key', t.uri()], { env });
  assert.equal(again.status, 0, again.stderr);
});
