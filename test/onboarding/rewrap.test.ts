// `cloakpipe wrap` after `unwrap`, through the real binary: a server whose command was edited
// while it was unwrapped is wrapped again (its kept manifest named for review), while a second
// live entry of the same name with another command still may not share its folder.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { helperScript } from '../helpers/cli.js';
import { put, run, world } from './host-world.js';

const J = JSON.stringify;

const config = (args: string[]) => `{\n  "mcpServers": {\n    "crm": { "command": ${J(process.execPath)}, "args": ${J(args)} }\n  }\n}\n`;
const argsAfterDash = (path: string) => {
  const args = (JSON.parse(readFileSync(path, 'utf8')) as { mcpServers: { crm: { args: string[] } } }).mcpServers.crm.args;
  return args.slice(args.indexOf('--') + 1);
};

test('unwrap, edit the server, wrap again: wrapped with its new command, the kept manifest named for review; another live entry of that name is still left', () => {
  const w = world();
  const server = [helperScript('upstream.js'), 'paged'];
  const path = put(join(w.project, '.mcp.json'), config(server));
  assert.equal(run(w, 'wrap', ['--host', 'claude-code']).status, 0);
  const u = run(w, 'unwrap', ['--host', 'claude-code']);
  assert.equal(u.status, 0, u.stderr);
  // The user edits the server while it is unwrapped (a new flag, a new folder to serve).
  const edited = [...server, '--verbose'];
  put(path, config(edited));
  const r = run(w, 'wrap', ['--host', 'claude-code']);
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stderr, /"crm": keeping [^\n]*servers\/crm\/manifest\.yaml, drafted when the server had another command: review it against this one/);
  assert.deepEqual(argsAfterDash(path), [process.execPath, ...edited]);
  // unwrap still restores the edited entry byte for byte.
  assert.equal(run(w, 'unwrap', ['--host', 'claude-code']).status, 0);
  assert.equal(readFileSync(path, 'utf8'), config(edited));
  // While a wrapped entry of that name uses the folder, one with another command may not.
  assert.equal(run(w, 'wrap', ['--host', 'claude-code']).status, 0);
  const other = put(join(w.project, '.cursor', 'mcp.json'), config(server));
  const o = run(w, 'wrap', ['--host', 'cursor']);
  assert.equal(o.status, 1, o.stderr);
  assert.match(o.stderr, /"crm": left as is: servers\/crm belongs to another server of that name with another command/);
  assert.equal(readFileSync(other, 'utf8'), config(server));
});
