// A knowledge-graph session with @modelcontextprotocol/server-memory, through the real gate and
// straight to the server, compared call by call (test/helpers/session-pair.ts). Both runs use
// the same memory file, removed before each.
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { MEMORY, tempDir } from '../helpers/cli.js';
import { onlyDeclared, pairedSession, type Step } from '../helpers/session-pair.js';

const MEMORY_FILE = join(tempDir('cloakpipe-memory-'), 'memory.jsonl');

const DECLARED = ['create_entities', 'create_relations', 'add_observations', 'delete_entities', 'delete_observations', 'delete_relations', 'read_graph', 'search_nodes', 'open_nodes'];
const MANIFEST = `version: 1
release: memory-session@1
tools:
  create_entities: { effect: write, arguments: { entities: { type: array, max_items: 5, items: { type: object }, required: true } } }
  create_relations: { effect: write, arguments: { relations: { type: array, max_items: 5, items: { type: object }, required: true } } }
  add_observations: { effect: write, arguments: { observations: { type: array, max_items: 5, items: { type: object }, required: true } } }
  delete_entities: { effect: write, arguments: { entityNames: { type: array, max_items: 5, items: { type: string, max_len: 40 }, required: true } } }
  delete_observations: { effect: write, arguments: { deletions: { type: array, max_items: 5, items: { type: object }, required: true } } }
  delete_relations: { effect: write, arguments: { relations: { type: array, max_items: 5, items: { type: object }, required: true } } }
  read_graph: { effect: read, arguments: {} }
  search_nodes: { effect: read, arguments: { query: { type: string, pattern: "[A-Za-z ]{1,40}", required: true } } }
  open_nodes: { effect: read, arguments: { names: { type: array, max_items: 10, items: { type: string, max_len: 40 }, required: true } } }
`;

const call = (name: string, args: Record<string, unknown>) => (c: Client) => c.callTool({ name, arguments: args });
const ada = { name: 'Ada', entityType: 'person', observations: ['wrote the first program'] };
const charles = { name: 'Charles', entityType: 'person', observations: ['designed the Analytical Engine'] };
const knows = { from: 'Ada', to: 'Charles', relationType: 'worked with' };

const STEPS: Step[] = [
  // Every tool of this server is declared: the list passes whole.
  { label: 'tools/list', run: (c) => c.listTools(), expectThroughGate: onlyDeclared(DECLARED) },
  { label: 'read_graph, empty', run: call('read_graph', {}) },
  { label: 'create_entities Ada', run: call('create_entities', { entities: [ada] }) },
  { label: 'create_entities Charles', run: call('create_entities', { entities: [charles] }) },
  // The same call again: the server answers that nothing was new; a replay would repeat the first answer.
  { label: 'create_entities Ada again (already there)', run: call('create_entities', { entities: [ada] }) },
  { label: 'create_relations', run: call('create_relations', { relations: [knows] }) },
  { label: 'add_observations', run: call('add_observations', { observations: [{ entityName: 'Ada', contents: ['translated Menabrea', 'wrote notes A to G'] }] }) },
  { label: 'add_observations to an unknown entity', run: call('add_observations', { observations: [{ entityName: 'Nobody', contents: ['x'] }] }) },
  { label: 'search_nodes Engine', run: call('search_nodes', { query: 'Engine' }) },
  { label: 'open_nodes', run: call('open_nodes', { names: ['Ada', 'Nobody'] }) },
  { label: 'delete_observations', run: call('delete_observations', { deletions: [{ entityName: 'Ada', observations: ['translated Menabrea'] }] }) },
  { label: 'delete_relations', run: call('delete_relations', { relations: [knows] }) },
  { label: 'read_graph after the deletions', run: call('read_graph', {}) },
  // create → delete → create: the second create is a new operation and must run.
  { label: 'delete_entities Charles', run: call('delete_entities', { entityNames: ['Charles'] }) },
  { label: 'create_entities Charles again', run: call('create_entities', { entities: [charles] }) },
  { label: 'read_graph: Charles is back', run: call('read_graph', {}) },
  // What the manifest refuses.
  { label: 'create_entities of six', run: call('create_entities', { entities: Array.from({ length: 6 }, (_, i) => ({ name: `E${i}`, entityType: 'x', observations: [] })) }), refusedBy: 'argument_invalid' },
  { label: 'search_nodes with a shell payload', run: call('search_nodes', { query: 'Ada; rm -rf /' }), refusedBy: 'argument_invalid' },
  { label: 'delete_entities with an extra argument', run: call('delete_entities', { entityNames: ['Ada'], cascade: true }), refusedBy: 'undeclared_argument' },
  { label: 'an undeclared tool', run: call('wipe_graph', {}), refusedBy: 'undeclared_tool' },
  { label: 'read_graph: the refused calls changed nothing', run: call('read_graph', {}) },
];

pairedSession('memory', STEPS, { manifest: MANIFEST, command: [process.execPath, MEMORY], env: { MEMORY_FILE_PATH: MEMORY_FILE }, reset: () => rmSync(MEMORY_FILE, { force: true }) });
