// The manifest loader refuses what it does not understand, and each argument rule holds.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildManifest, loadManifest, ManifestError } from '../../src/contract/manifest.js';
import { tempDir } from '../helpers/cli.js';
import { buildContext } from '../../src/contract/context.js';
import { checkContract } from '../../src/gate/checks/contract.js';
import type { JsonObject } from '../../src/core/json.js';

const base = (tools: object, extra: object = {}) => ({ version: 1, release: 'r@1', tools, ...extra });

test('load errors: unknown keys, unknown rules, bad types, bad regexes, unknown labels', () => {
  const bad: [string, unknown][] = [
    ['unknown top-level key', base({}, { allow_all: true })],
    ['version 2', { ...base({}), version: 2 }],
    ['no release', { version: 1, tools: {} }],
    ['unknown tool key', base({ t: { effect: 'read', arguments: {}, sudo: true } })],
    ['bad effect', base({ t: { effect: 'delete', arguments: {} } })],
    ['unknown rule', base({ t: { effect: 'read', arguments: { a: { type: 'string', maxlen: 3 } } } })],
    ['unknown type', base({ t: { effect: 'read', arguments: { a: { type: 'str' } } } })],
    ['bad regex', base({ t: { effect: 'read', arguments: { a: { pattern: '(' } } } })],
    ['backreference (not linear-time)', base({ t: { effect: 'read', arguments: { a: { pattern: '(a)\\1' } } } })],
    ['lookahead (not linear-time)', base({ t: { effect: 'read', arguments: { a: { pattern: '(?=a)a' } } } })],
    ['negative max_len', base({ t: { effect: 'read', arguments: { a: { max_len: -1 } } } })],
    ['unknown returns label', base({ t: { effect: 'read', returns: 'secret', arguments: {} } })],
    ['duplicate label', base({}, { labels: ['a', 'a'] })],
    ['operation_id on a read tool', base({ t: { effect: 'read', operation_id: 'k', arguments: { k: {} } } })],
    ['operation_id naming no argument', base({ t: { effect: 'write', operation_id: 'k', arguments: {} } })],
    ['classify with an unknown label', base({}, { classify: [{ label: 'nope', pattern: 'x' }] })],
    ['classify with a bad pattern', base({}, { classify: [{ label: 'public', pattern: '(' }] })],
    ['a pin for an undeclared tool', base({}, { pins: { t: 'sha256:' + '0'.repeat(64) } })],
    // Names every object has by its prototype are not declared.
    ['operation_id naming a prototype member', base({ t: { effect: 'write', operation_id: 'constructor', arguments: {} } })],
    ['a pin for a prototype member', base({ t: { effect: 'read' } }, { pins: { toString: 'sha256:' + '0'.repeat(64) } })],
    ['a pin that is not a digest', base({ t: { effect: 'read', arguments: {} } }, { pins: { t: 'abc' } })],
    ['one_of_context that is not a path', base({ t: { effect: 'read', arguments: { a: { one_of_context: 'task..x' } } } })],
  ];
  for (const [name, doc] of bad) assert.throws(() => buildManifest(doc), ManifestError, name);
});

test('the digest is of the document as written, stable across key order', () => {
  const a = buildManifest(base({ t: { effect: 'read', arguments: {} } }));
  const b = buildManifest({ tools: { t: { arguments: {}, effect: 'read' } }, release: 'r@1', version: 1 });
  assert.equal(a.digest, b.digest);
  const c = buildManifest(base({ t: { effect: 'write', arguments: {} } }));
  assert.notEqual(a.digest, c.digest);
});

const M = buildManifest(
  base({
    t: {
      effect: 'read',
      arguments: {
        s: { type: 'string', min_len: 2, max_len: 3 },
        i: { type: 'integer', minimum: 1, maximum: 10 },
        n: { type: 'number' },
        b: { type: 'boolean' },
        e: { enum: ['x', 1, { k: 'v' }] },
        p: { type: 'string', pattern: '[a-z]+' },
        arr: { type: 'array', max_items: 2, items: { type: 'string', one_of_context: 'task.emails' } },
        o: { type: 'object' },
        to: { type: 'string', one_of_context: 'task.owner' },
        req: { type: 'string', required: false },
        evil: { type: 'string', pattern: '(a+)+$' },
      },
    },
    needs: { effect: 'read', arguments: { x: { type: 'string', required: true } } },
  }),
);
const CTX = buildContext({ task: { id: 'T', emails: ['a@x', 'b@x'], owner: 'o@x' } });
const check = (tool: string, args: JsonObject) => {
  const v = checkContract({ tool, arguments: args, meta: {}, taskId: 'T' }, M, CTX);
  return v.ok ? 'ok' : v.code;
};

test('each argument rule accepts what it allows and refuses the rest', () => {
  const table: [JsonObject, string][] = [
    [{ s: 'ab' }, 'ok'],
    [{ s: 'a' }, 'argument_invalid'],
    [{ s: 'abcd' }, 'argument_invalid'],
    [{ s: '😀😀' }, 'ok'], // code points, not UTF-16 units
    [{ s: 12 }, 'argument_invalid'],
    [{ i: 5 }, 'ok'],
    [{ i: 5.5 }, 'argument_invalid'],
    [{ i: 0 }, 'argument_invalid'],
    [{ i: 11 }, 'argument_invalid'],
    [{ n: 5.5 }, 'ok'],
    [{ n: '5' }, 'argument_invalid'],
    [{ b: false }, 'ok'],
    [{ b: 'false' }, 'argument_invalid'],
    [{ e: 'x' }, 'ok'],
    [{ e: 1 }, 'ok'],
    [{ e: { k: 'v' } }, 'ok'],
    [{ e: 'y' }, 'argument_invalid'],
    [{ e: '1' }, 'argument_invalid'],
    [{ p: 'abc' }, 'ok'],
    [{ p: 'abc1' }, 'argument_invalid'], // a full match, not a search
    [{ p: '1abc' }, 'argument_invalid'],
    [{ arr: ['a@x'] }, 'ok'],
    [{ arr: ['a@x', 'c@x'] }, 'scope_mismatch'],
    [{ arr: ['a@x', 'b@x', 'a@x'] }, 'argument_invalid'],
    [{ arr: [1] }, 'argument_invalid'],
    [{ arr: 'a@x' }, 'argument_invalid'],
    [{ o: { a: 1 } }, 'ok'],
    [{ o: [1] }, 'argument_invalid'],
    [{ to: 'o@x' }, 'ok'],
    [{ to: 'O@x' }, 'scope_mismatch'],
    [{ zz: 1 }, 'undeclared_argument'],
  ];
  for (const [args, want] of table) assert.equal(check('t', args), want, JSON.stringify(args));
  assert.equal(check('needs', {}), 'argument_invalid');
  assert.equal(check('needs', { x: 'y' }), 'ok');
  assert.equal(check('nope', {}), 'undeclared_tool');
  assert.equal(check('toString', {}), 'undeclared_tool', 'prototype names are not tools');
  assert.equal(check('t', JSON.parse('{"__proto__": 1}')), 'undeclared_argument');
});

test('an operator pattern with catastrophic backtracking in RegExp runs in linear time here', () => {
  // (a+)+$ on "aaaa…!" takes exponential time in a backtracking engine; RE2 answers at once.
  const input = 'a'.repeat(50_000) + '!';
  assert.equal(check('t', { evil: input }), 'argument_invalid');
});

test('one_of_context with a missing path or a scalar value', () => {
  const m = buildManifest(base({ t: { effect: 'read', arguments: { to: { one_of_context: 'task.missing' }, who: { one_of_context: 'task.owner' } } } }));
  const v = (args: JsonObject) => {
    const r = checkContract({ tool: 't', arguments: args, meta: {}, taskId: 'T' }, m, CTX);
    return r.ok ? 'ok' : r.code;
  };
  assert.equal(v({ to: 'x' }), 'scope_mismatch', 'nothing is in scope when the context names nothing');
  assert.equal(v({ who: 'o@x' }), 'ok');
  assert.equal(v({ who: ['o@x'] }), 'scope_mismatch');
});

test('a key twice in one mapping of a manifest file is a load error, at any depth; the same key in two mappings is not', () => {
  const ok = 'version: 1\nrelease: r@1\ntools:\n  a:\n    effect: read\n    arguments:\n      q: { type: string }\n  b:\n    effect: read\n    arguments:\n      q: { type: string }\n';
  const file = (text: string) => {
    const p = join(tempDir(), 'manifest.yaml');
    writeFileSync(p, text);
    return p;
  };
  assert.deepEqual(Object.keys(loadManifest(file(ok)).manifest.tools), ['a', 'b']);
  for (const twice of [ok + '  a:\n    effect: write\n    arguments: {}\n', ok.replace('q: { type: string }', 'q: { type: string, type: integer }'), 'version: 1\n' + ok])
    assert.throws(() => loadManifest(file(twice)), (e) => e instanceof ManifestError && /not valid YAML\/JSON: .*the key .* twice/.test(e.message));
});
