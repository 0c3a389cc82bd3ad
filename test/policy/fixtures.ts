// Shared fixtures for the policy tests: a small manifest, the support-agent example, requests.
import { readFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Manifest } from '../../src/contract/manifest-types.js';
import { loadManifest } from '../../src/contract/manifest.js';
import type { PolicyRequest } from '../../src/policy/engine.js';
import type { JsonObject, JsonValue } from '../../src/core/json.js';
import fc from 'fast-check';

// dist/test/policy → repository root
export const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
export const EXAMPLE = {
  manifest: join(ROOT, 'examples/support-agent.yaml'),
  policy: join(ROOT, 'examples/support-agent.cedar'),
  context: join(ROOT, 'examples/support-agent.context.json'),
};

export function exampleManifest(): Manifest {
  return loadManifest(EXAMPLE.manifest).manifest;
}

export function exampleTask(): JsonObject {
  return JSON.parse(readFileSync(EXAMPLE.context, 'utf8')).task;
}

export const SMALL: Manifest = {
  version: 1,
  release: 'test@1',
  labels: ['public', 'internal', 'confidential', 'restricted'],
  classify: [],
  tools: {
    read_doc: { effect: 'read', returns: 'confidential', arguments: { id: { type: 'string' } } },
    send: {
      effect: 'write',
      approval: 'required',
      accepts: 'internal',
      arguments: {
        to: { type: 'string' },
        who: { type: 'object' },
        n: { type: 'integer' },
        price: { type: 'number' },
        tags: { type: 'array', items: { type: 'string' } },
      },
    },
  },
};

export const ZERO = { minute: 0, hour: 0, day: 0 };

export function request(over: Partial<PolicyRequest> = {}): PolicyRequest {
  return { agent: 'agent', tool: 'read_doc', args: {}, task: {}, sessionLabel: 'public', calls: ZERO, callsAll: ZERO, ...over };
}

export function tempDir(prefix = 'cloakpipe-policy-'): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

/** Small JSON values for property tests: `numbers` beside fc.integer and fc.double, object keys from `keys`. */
export function jsonValues(o: { numbers?: fc.Arbitrary<number>[]; stringMax: number; keys: fc.Arbitrary<string> }): fc.Arbitrary<JsonValue> {
  return fc.letrec<{ v: JsonValue }>((tie) => ({
    v: fc.oneof(
      { depthSize: 'small' },
      fc.constant(null),
      fc.boolean(),
      fc.integer(),
      ...(o.numbers ?? []),
      fc.double({ noNaN: true, noDefaultInfinity: true }),
      fc.string({ maxLength: o.stringMax }),
      fc.array(tie('v'), { maxLength: 3 }),
      fc.dictionary(o.keys, tie('v'), { maxKeys: 3 }),
    ),
  })).v;
}
