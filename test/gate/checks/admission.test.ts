// The admission check over a confined session's real restriction state: revoked tools and a
// closed admission are refusals with their codes; the revision in force is a fact of the entry.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkAdmission } from '../../../src/gate/checks/admission.js';
import { Restrictions } from '../../../src/confine/restrictions.js';
import { factsFor } from '../../operations/facts.js';

const facts = (tool: string, r?: Restrictions) => factsFor({ name: tool, services: r ? { admission: r } : {} });

test('without a confined session (mcp-proxy) the check passes and adds nothing', () => {
  const f = facts('send_update');
  assert.deepEqual(checkAdmission(f), { ok: true });
  assert.equal(f.notes.fields.admission_revision, undefined);
});

test('a tool approved at start passes at revision 0; revoked at revision 1 it is refused revoked', () => {
  const r = new Restrictions(['send_update', 'post_public']);
  const f0 = facts('send_update', r);
  assert.equal(checkAdmission(f0).ok, true);
  assert.equal(f0.notes.fields.admission_revision, 0);
  assert.deepEqual(r.apply('{"revision": 1, "tools": ["post_public"]}'), { ok: true, revision: 1 });
  const f1 = facts('send_update', r);
  const v = checkAdmission(f1);
  assert.equal(v.ok, false);
  assert.equal(!v.ok && v.code, 'revoked');
  assert.equal(f1.notes.fields.admission_revision, 1);
  assert.equal(checkAdmission(facts('post_public', r)).ok, true);
});

test('a stale update closes admission for every tool, revoked or not, until a valid newer revision', () => {
  const r = new Restrictions(['send_update', 'post_public']);
  r.apply('{"revision": 2, "tools": ["post_public"]}');
  assert.deepEqual(r.apply('{"revision": 2, "tools": ["post_public"]}'), { ok: false, closed: true });
  for (const tool of ['send_update', 'post_public']) {
    const v = checkAdmission(facts(tool, r));
    assert.equal(!v.ok && v.code, 'admission_closed', tool);
  }
  r.apply('{"revision": 3, "tools": ["send_update", "post_public"]}');
  assert.equal(checkAdmission(facts('send_update', r)).ok, true);
});
