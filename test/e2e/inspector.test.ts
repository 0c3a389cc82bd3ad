// The MCP Inspector's CLI (@modelcontextprotocol/inspector --cli) as the host: one process per
// request, as people script it (each takes a few seconds, so the list is short). Through the real gate it must show what it shows against the
// server itself, and a refusal must be readable in what it prints (it shows `message`, not
// `data`).
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { CLI, EVERYTHING, ROOT, makeHome, writeFiles, PERMIT_ALL } from '../helpers/cli.js';
// The manifest both doors' session tests run server-everything under.
import { DECLARED, MANIFEST } from '../helpers/everything-session.js';

const INSPECTOR = join(ROOT, 'node_modules/@modelcontextprotocol/inspector/cli/build/cli.js');

let home: string;
let files: Record<string, string>;
before(() => {
  files = writeFiles({ 'm.yaml': MANIFEST, 'p.cedar': PERMIT_ALL });
  home = makeHome();
});

interface Run {
  status: number | null;
  out: string;
  err: string;
}

/** `mcp-inspector --cli TARGET... --method ...`, offline, bounded. */
function inspector(target: string[], method: string[]): Run {
  const r = spawnSync(process.execPath, [INSPECTOR, '--cli', ...target, ...method], { encoding: 'utf8', timeout: 60_000 });
  return { status: r.status, out: r.stdout, err: r.stderr };
}

const server = [process.execPath, EVERYTHING, 'stdio'];
const gateFlags = () => ['mcp-proxy', '--home', home, '--manifest', files['m.yaml']!, '--policy', files['p.cedar']!];
// The Inspector cuts its own argv at the first `--`, so the gate's `-- UPSTREAM` cannot be given
// on its command line; a shell carries it in one argument.
const viaShell = () => ['/bin/sh', '-c', `exec ${[process.execPath, CLI, ...gateFlags(), '--', ...server].join(' ')}`];
// How a user writes it without a shell: the upstream as one flag value (product.md section 2).
const viaFlag = () => [process.execPath, CLI, ...gateFlags(), '--upstream', server.join(' ')];

const json = (r: Run): any => {
  assert.equal(r.status, 0, `inspector failed: ${r.err}`);
  return JSON.parse(r.out);
};

const CALLS: string[][] = [
  ['--method', 'tools/call', '--tool-name', 'get-sum', '--tool-arg', 'a=2', '--tool-arg', 'b=40'],
  ['--method', 'resources/list'],
  ['--method', 'prompts/get', '--prompt-name', 'args-prompt', '--prompt-args', 'city=Zürich'],
];

test('Inspector CLI through the gate: tool calls, resources and prompts answer as the server does', () => {
  for (const m of CALLS) assert.deepEqual(json(inspector(viaShell(), m)), json(inspector(server, m)), m.join(' '));
});

test('Inspector CLI through the gate: tools/list shows only the declared tools', () => {
  const direct = json(inspector(server, ['--method', 'tools/list']));
  const gated = json(inspector(viaShell(), ['--method', 'tools/list']));
  assert.deepEqual(gated, { ...direct, tools: direct.tools.filter((t: { name: string }) => DECLARED.includes(t.name)) });
});

test('Inspector CLI through the gate: a refused call fails and prints the reason with its detail', () => {
  const r = inspector(viaShell(), ['--method', 'tools/call', '--tool-name', 'get-env']);
  assert.notEqual(r.status, 0);
  const shown = r.out + r.err;
  assert.match(shown, /cloakpipe refused: undeclared_tool: \S/);
});

test('Inspector CLI through the gate: a refused call fails and names the refusal', () => {
  for (const [m, reason] of [
    [['--method', 'tools/call', '--tool-name', 'get-env'], 'undeclared_tool'],
    [['--method', 'tools/call', '--tool-name', 'get-sum', '--tool-arg', 'a=x', '--tool-arg', 'b=1'], 'argument_invalid'],
  ] as const) {
    const r = inspector(viaShell(), [...m]);
    assert.notEqual(r.status, 0, m.join(' '));
    assert.ok((r.out + r.err).includes(`cloakpipe refused: ${reason}`), `${m.join(' ')}: ${r.out}${r.err}`);
  }
});

test('Inspector CLI with the upstream given as --upstream (no shell, no `--`)', () => {
  const m = CALLS[0]!;
  assert.deepEqual(json(inspector(viaFlag(), m)), json(inspector(server, m)));
});

test('Inspector CLI from an mcp.json config (the shape hosts use), the gate as the server', () => {
  const [command, ...args] = viaFlag();
  const config = writeFiles({ 'mcp.json': { mcpServers: { gated: { command, args } } } })['mcp.json']!;
  const m = CALLS[0]!;
  const r = spawnSync(process.execPath, [INSPECTOR, '--cli', '--config', config, '--server', 'gated', ...m], { encoding: 'utf8', timeout: 60_000 });
  assert.deepEqual(json({ status: r.status, out: r.stdout, err: r.stderr }), json(inspector(server, m)));
});
