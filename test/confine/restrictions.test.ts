// Live restriction against a model written from confinement.md: random sequences of updates
// (valid, stale, invalid, widening, malformed text, duplicate keys, truncated lines) never let
// a call through that the contract would refuse. Seeded: a fixed seed and a fresh one, printed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { Restrictions } from '../../src/confine/restrictions.js';

const APPROVED = ['send_update', 'post_public', 'read_ticket'];
const TOOLS = [...APPROVED, 'delete_everything'];

/** Ways an update can be wrong besides being stale; each makes it invalid. */
const DEFECTS: Record<string, (u: { revision: number; tools: string[] }) => string> = {
  widen: (u) => JSON.stringify({ ...u, tools: [...u.tools, 'delete_everything'] }),
  repeated_tool: (u) => JSON.stringify({ ...u, tools: [...u.tools, 'send_update', 'send_update'] }),
  ceiling_key: (u) => JSON.stringify({ ...u, ceiling: 'restricted' }),
  label_key: (u) => JSON.stringify({ ...u, label: 'public' }),
  missing_tools: (u) => JSON.stringify({ revision: u.revision }),
  tools_not_a_list: (u) => JSON.stringify({ ...u, tools: 'send_update' }),
  revision_text: (u) => JSON.stringify({ ...u, revision: String(u.revision) }),
  revision_fraction: (u) => JSON.stringify({ ...u, revision: u.revision + 0.5 }),
  revision_zero: (u) => JSON.stringify({ ...u, revision: 0 }),
  revision_negative: (u) => JSON.stringify({ ...u, revision: -u.revision }),
  revision_unsafe: (u) => JSON.stringify({ ...u, revision: 2 ** 53 }),
  duplicate_key: (u) => `{"revision": 99, ${JSON.stringify(u).slice(1)}`,
  truncated: (u) => JSON.stringify(u).slice(0, -1),
  not_json: () => 'revision 5 tools send_update',
};

const update = fc.record({
  revision: fc.integer({ min: 1, max: 12 }),
  tools: fc.uniqueArray(fc.constantFrom(...APPROVED), { maxLength: 3 }),
  defect: fc.oneof({ weight: 3, arbitrary: fc.constant(null) }, { weight: 2, arbitrary: fc.constantFrom(...Object.keys(DEFECTS)) }),
});

const seed = process.env.FUZZ_SEED !== undefined ? Number(process.env.FUZZ_SEED) : (Date.now() ^ Math.floor(Math.random() * 2 ** 31)) | 0;
for (const s of [0x5eedc0de, seed]) {
  test(`restriction state follows the contract on random update sequences [FUZZ_SEED=${s}]`, () => {
    fc.assert(
      fc.property(fc.array(update, { maxLength: 30 }), (updates) => {
        const r = new Restrictions(APPROVED);
        const model = { revision: 0, closed: false, allowed: new Set(APPROVED) };
        for (const { revision, tools, defect } of updates) {
          // The contract, plainly: a well-formed update above the revision in force is applied;
          // anything else closes admission and changes nothing else.
          const text = defect ? DEFECTS[defect]({ revision, tools }) : JSON.stringify({ revision, tools });
          const ok = defect === null && revision > model.revision;
          if (ok) Object.assign(model, { revision, closed: false, allowed: new Set(tools) });
          else model.closed = true;
          assert.deepEqual(r.apply(text), ok ? { ok: true, revision: model.revision } : { ok: false, closed: true }, text);
          for (const tool of TOOLS) {
            const expected = model.closed ? 'closed' : model.allowed.has(tool) ? 'open' : 'revoked';
            assert.deepEqual(r.admits(tool), { state: expected, revision: model.revision }, `${text} → ${tool}`);
          }
        }
      }),
      { seed: s, numRuns: 400 },
    );
  });
}
