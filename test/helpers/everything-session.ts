// The server-everything session both doors are checked with (session-everything over stdio,
// http-everything over Streamable HTTP): the manifest it runs under and its steps, call by call.
// get-env (the server's environment), gzip-file-as-resource (fetches a URL), the toggles and the
// task-based research query are left out of the manifest on purpose.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { EmptyResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { onlyDeclared, runStraight, type Step } from './session-pair.js';
import { EVERYTHING } from './cli.js';

export const DECLARED = ['echo', 'get-annotated-message', 'get-resource-links', 'get-resource-reference', 'get-structured-content', 'get-sum', 'get-tiny-image', 'trigger-long-running-operation'];
export const MANIFEST = `version: 1
release: everything-session@1
tools:
  echo:
    effect: read
    arguments:
      message: { type: string, max_len: 200, required: true }
  get-annotated-message:
    effect: read
    arguments:
      messageType: { type: string, enum: [error, success, debug], required: true }
      includeImage: { type: boolean }
  get-resource-links:
    effect: read
    arguments:
      count: { type: integer, minimum: 1, maximum: 10 }
  get-resource-reference:
    effect: read
    arguments:
      resourceType: { type: string, enum: [Text, Blob] }
      resourceId: { type: integer, minimum: 1, maximum: 100 }
  get-structured-content:
    effect: read
    arguments:
      location: { type: string, enum: ["New York", "Chicago", "Los Angeles"], required: true }
  get-sum:
    effect: read
    arguments:
      a: { type: number, required: true }
      b: { type: number, required: true }
  get-tiny-image: { effect: read, arguments: {} }
  trigger-long-running-operation:
    effect: read
    arguments:
      duration: { type: number, maximum: 5 }
      steps: { type: integer, maximum: 10 }
`;

/**
 * Dynamic resources say when this server made them ("created at 6:13:52 PM", also inside base64
 * blobs): the same resource, another instant.
 */
const CLOCK = /created at \d{1,2}:\d{2}:\d{2}\s?[AP]M/g;
function withoutClock(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(withoutClock);
  if (v === null || typeof v !== 'object') return v;
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v)) {
    if (k === 'text' && typeof x === 'string') out[k] = x.replace(CLOCK, 'created at <time>');
    else if (k === 'blob' && typeof x === 'string') out[k] = Buffer.from(x, 'base64').toString('utf8').replace(CLOCK, 'created at <time>');
    else out[k] = withoutClock(x);
  }
  return out;
}

const call = (name: string, args: Record<string, unknown>) => (c: Client) => c.callTool({ name, arguments: args });

export const STEPS: Step[] = [
  { label: 'tools/list', run: (c) => c.listTools(), expectThroughGate: onlyDeclared(DECLARED) },
  { label: 'ping', run: (c) => c.ping() },
  { label: 'echo', run: call('echo', { message: 'hello through the gate' }) },
  { label: 'echo of astral and line-separator characters', run: call('echo', { message: 'é\u2028😀\u0000"\\' }) },
  { label: 'get-sum of integers', run: call('get-sum', { a: 2, b: 40 }) },
  { label: 'get-sum of 0.1 and 0.2', run: call('get-sum', { a: 0.1, b: 0.2 }) },
  { label: 'get-sum of -0 and 1e-7', run: call('get-sum', { a: -0, b: 1e-7 }) },
  { label: 'get-tiny-image', run: call('get-tiny-image', {}) },
  { label: 'get-annotated-message with image', run: call('get-annotated-message', { messageType: 'success', includeImage: true }) },
  { label: 'get-annotated-message error', run: call('get-annotated-message', { messageType: 'error' }) },
  { label: 'get-structured-content', run: call('get-structured-content', { location: 'Chicago' }) },
  { label: 'get-resource-links', run: call('get-resource-links', { count: 4 }) },
  { label: 'get-resource-reference Text', run: call('get-resource-reference', { resourceType: 'Text', resourceId: 3 }), normalize: withoutClock },
  { label: 'get-resource-reference Blob', run: call('get-resource-reference', { resourceType: 'Blob', resourceId: 4 }), normalize: withoutClock },
  {
    label: 'trigger-long-running-operation with progress',
    run: (c, onprogress) => c.callTool({ name: 'trigger-long-running-operation', arguments: { duration: 1, steps: 3 } }, undefined, { onprogress }),
  },
  { label: 'resources/list', run: (c) => c.listResources() },
  { label: 'resources/templates/list', run: (c) => c.listResourceTemplates() },
  { label: 'resources/read of a static document', run: (c) => c.readResource({ uri: 'demo://resource/static/document/architecture.md' }) },
  { label: 'resources/read of a dynamic blob', run: (c) => c.readResource({ uri: 'demo://resource/dynamic/blob/7' }), normalize: withoutClock },
  { label: 'resources/read of an unknown resource', run: (c) => c.readResource({ uri: 'demo://resource/nowhere' }) },
  { label: 'prompts/list', run: (c) => c.listPrompts() },
  { label: 'prompts/get simple-prompt', run: (c) => c.getPrompt({ name: 'simple-prompt' }) },
  { label: 'prompts/get args-prompt', run: (c) => c.getPrompt({ name: 'args-prompt', arguments: { city: 'Zürich', state: 'ZH' } }) },
  { label: 'completion/complete', run: (c) => c.complete({ ref: { type: 'ref/prompt', name: 'completable-prompt' }, argument: { name: 'department', value: 'E' } }) },
  { label: 'logging/setLevel', run: (c) => c.setLoggingLevel('error') },
  { label: 'an unknown method', run: (c) => c.request({ method: 'no/such/method' }, EmptyResultSchema) },
  // What the manifest refuses.
  { label: 'get-env', run: call('get-env', {}), refusedBy: 'undeclared_tool' },
  { label: 'gzip-file-as-resource', run: call('gzip-file-as-resource', { name: 'x.gz', data: 'https://example.com/' }), refusedBy: 'undeclared_tool' },
  { label: 'echo with an extra argument', run: call('echo', { message: 'hi', secret: 'x' }), refusedBy: 'undeclared_argument' },
  { label: 'echo of 201 characters', run: call('echo', { message: 'x'.repeat(201) }), refusedBy: 'argument_invalid' },
  { label: 'get-sum of a string', run: call('get-sum', { a: '1', b: 1 }), refusedBy: 'argument_invalid' },
  { label: 'trigger-long-running-operation of an hour', run: call('trigger-long-running-operation', { duration: 3600, steps: 1 }), refusedBy: 'argument_invalid' },
  { label: 'echo after the refusals', run: call('echo', { message: 'still here' }) },
];

/** The session straight to a fresh server-everything over stdio: what the gate's answers are compared with. */
/** The session straight to server-everything over stdio. */
export const directSession = () => runStraight([process.execPath, EVERYTHING, 'stdio'], STEPS);
