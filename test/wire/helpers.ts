// Shared assertions for the wire tests.
import assert from 'node:assert/strict';
import { WireError } from '../../src/wire/strict-parse.js';
import type { WireRefusal } from '../../src/core/refusal.js';

export function assertRefuses(fn: () => unknown, code: WireRefusal, label = ''): WireError {
  let caught: unknown;
  try {
    fn();
  } catch (e) {
    caught = e;
  }
  assert.ok(caught !== undefined, `expected ${code} but it was accepted ${label}`);
  assert.ok(caught instanceof WireError, `expected WireError ${code}, got ${String(caught)} ${label}`);
  assert.equal(caught.code, code, `${label}: ${caught.detail}`);
  assert.ok(!caught.detail.includes('\n'), 'detail is one line');
  return caught;
}
