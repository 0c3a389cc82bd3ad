// A coding agent's session with @modelcontextprotocol/server-filesystem, through the real gate
// and straight to the server, compared call by call (test/helpers/session-pair.ts). Both runs
// use the same directory, laid out afresh before each, so paths in answers agree.
import { cpSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { FILESYSTEM, tempDir } from '../helpers/cli.js';
import { onlyDeclared, pairedSession, type Step } from '../helpers/session-pair.js';

const base = tempDir('cloakpipe-fs-');
const ROOT = join(base, 'project');
const SEED = join(base, 'seed');
// A 1×1 PNG.
const PIXEL = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==', 'base64');
mkdirSync(join(SEED, 'src'), { recursive: true });
writeFileSync(join(SEED, 'README.md'), '# project\n\nhello world\nsecond line\nthird line\n');
writeFileSync(join(SEED, 'src', 'main.ts'), 'export const answer = 41;\n');
writeFileSync(join(SEED, 'pixel.png'), PIXEL);

function layOut(): void {
  rmSync(ROOT, { recursive: true, force: true });
  cpSync(SEED, ROOT, { recursive: true });
}

const p = (rel: string) => join(ROOT, rel);
const esc = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const IN_ROOT = `${esc(ROOT)}(/[A-Za-z0-9_.-]+)*`;

const DECLARED = ['read_text_file', 'read_media_file', 'read_multiple_files', 'write_file', 'edit_file', 'create_directory', 'list_directory', 'list_directory_with_sizes', 'directory_tree', 'search_files', 'get_file_info', 'list_allowed_directories'];
// move_file and the deprecated read_file are left out on purpose: the release does not use them.
const MANIFEST = `version: 1
release: fs-session@1
tools:
  list_allowed_directories: { effect: read, arguments: {} }
  read_text_file:
    effect: read
    arguments:
      path: { type: string, pattern: "${IN_ROOT}", required: true }
      head: { type: integer, minimum: 1 }
      tail: { type: integer, minimum: 1 }
  read_media_file: { effect: read, arguments: { path: { type: string, pattern: "${IN_ROOT}", required: true } } }
  read_multiple_files: { effect: read, arguments: { paths: { type: array, max_items: 10, items: { type: string, pattern: "${IN_ROOT}" }, required: true } } }
  write_file:
    effect: write
    arguments:
      path: { type: string, pattern: "${IN_ROOT}", required: true }
      content: { type: string, max_len: 1000, required: true }
  edit_file:
    effect: write
    arguments:
      path: { type: string, pattern: "${IN_ROOT}", required: true }
      edits: { type: array, max_items: 5, items: { type: object }, required: true }
      dryRun: { type: boolean }
  create_directory: { effect: write, arguments: { path: { type: string, pattern: "${IN_ROOT}", required: true } } }
  list_directory: { effect: read, arguments: { path: { type: string, pattern: "${IN_ROOT}", required: true } } }
  list_directory_with_sizes:
    effect: read
    arguments:
      path: { type: string, pattern: "${IN_ROOT}", required: true }
      sortBy: { type: string, enum: [name, size] }
  directory_tree:
    effect: read
    arguments:
      path: { type: string, pattern: "${IN_ROOT}", required: true }
      excludePatterns: { type: array, items: { type: string } }
  search_files:
    effect: read
    arguments:
      path: { type: string, pattern: "${IN_ROOT}", required: true }
      pattern: { type: string, max_len: 100, required: true }
      excludePatterns: { type: array, items: { type: string } }
  get_file_info: { effect: read, arguments: { path: { type: string, pattern: "${IN_ROOT}", required: true } } }
`;

/** get_file_info reports the times of this run's files: the same shape, other instants. */
const withoutTimes = (v: unknown): unknown => JSON.parse(JSON.stringify(v).replace(/(created|modified|accessed|birthtime|mtime|atime|ctime): [^\\]*/g, '$1: <time>'));

const call = (name: string, args: Record<string, unknown>) => (c: Client) => c.callTool({ name, arguments: args });

const STEPS: Step[] = [
  { label: 'tools/list', run: (c) => c.listTools(), expectThroughGate: onlyDeclared(DECLARED) },
  { label: 'list_allowed_directories', run: call('list_allowed_directories', {}) },
  { label: 'list_directory of the project', run: call('list_directory', { path: ROOT }) },
  { label: 'read_text_file README.md', run: call('read_text_file', { path: p('README.md') }) },
  { label: 'read_text_file README.md head 2', run: call('read_text_file', { path: p('README.md'), head: 2 }) },
  { label: 'read_text_file README.md tail 1', run: call('read_text_file', { path: p('README.md'), tail: 1 }) },
  { label: 'read_multiple_files', run: call('read_multiple_files', { paths: [p('README.md'), p('src/main.ts')] }) },
  { label: 'read_media_file pixel.png', run: call('read_media_file', { path: p('pixel.png') }) },
  { label: 'read_text_file of a file that does not exist', run: call('read_text_file', { path: p('missing.txt') }) },
  { label: 'write_file notes.txt v1', run: call('write_file', { path: p('notes.txt'), content: 'v1' }) },
  { label: 'write_file notes.txt v2', run: call('write_file', { path: p('notes.txt'), content: 'v2' }) },
  { label: 'write_file notes.txt v1 again', run: call('write_file', { path: p('notes.txt'), content: 'v1' }) },
  // v1, v2, v1: the third write is a new operation, not a replay of the first (product.md 5).
  { label: 'read_text_file notes.txt', run: call('read_text_file', { path: p('notes.txt') }) },
  { label: 'edit_file dry run', run: call('edit_file', { path: p('src/main.ts'), edits: [{ oldText: '41', newText: '42' }], dryRun: true }) },
  { label: 'edit_file', run: call('edit_file', { path: p('src/main.ts'), edits: [{ oldText: '41', newText: '42' }] }) },
  { label: 'read_text_file after the edit', run: call('read_text_file', { path: p('src/main.ts') }) },
  { label: 'edit_file whose old text is gone', run: call('edit_file', { path: p('src/main.ts'), edits: [{ oldText: '41', newText: '43' }] }) },
  { label: 'create_directory docs', run: call('create_directory', { path: p('docs') }) },
  { label: 'write_file docs/guide.md', run: call('write_file', { path: p('docs/guide.md'), content: '# guide\n' }) },
  { label: 'list_directory_with_sizes by size', run: call('list_directory_with_sizes', { path: ROOT, sortBy: 'size' }) },
  { label: 'directory_tree', run: call('directory_tree', { path: ROOT }) },
  { label: 'directory_tree excluding src', run: call('directory_tree', { path: ROOT, excludePatterns: ['src'] }) },
  { label: 'search_files *.md', run: call('search_files', { path: ROOT, pattern: '**/*.md' }) },
  { label: 'get_file_info README.md', run: call('get_file_info', { path: p('README.md') }), normalize: withoutTimes },
  // What the manifest refuses: an undeclared tool, a path outside the project, an oversize write,
  // an argument the tool does not list.
  { label: 'move_file README.md away', run: call('move_file', { source: p('README.md'), destination: p('gone.md') }), refusedBy: 'undeclared_tool' },
  { label: 'read_text_file /etc/passwd', run: call('read_text_file', { path: '/etc/passwd' }), refusedBy: 'argument_invalid' },
  { label: 'read_text_file through ..', run: call('read_text_file', { path: p('../seed/README.md') }), refusedBy: 'argument_invalid' },
  { label: 'write_file of 2,000 characters', run: call('write_file', { path: p('big.txt'), content: 'x'.repeat(2000) }), refusedBy: 'argument_invalid' },
  { label: 'write_file with an extra argument', run: call('write_file', { path: p('extra.txt'), content: 'x', mode: '0777' }), refusedBy: 'undeclared_argument' },
  // The refused calls left nothing behind: the same listing and the same "not found" as a
  // server that never saw them.
  { label: 'list_directory after the refusals', run: call('list_directory', { path: ROOT }) },
  { label: 'read_text_file big.txt (never written)', run: call('read_text_file', { path: p('big.txt') }) },
  { label: 'read_text_file README.md (never moved)', run: call('read_text_file', { path: p('README.md') }) },
];

pairedSession('filesystem', STEPS, { manifest: MANIFEST, command: [process.execPath, FILESYSTEM, ROOT], reset: layOut });
