// What a person typing the command line meets: a mistyped flag or command gets a suggestion,
// --version prints the package's version, mcp-proxy --help lists every option with its default,
// and a broken context file is named with the line and column of the fault.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PERMIT_ALL, ROOT, cloakpipe, makeHome, writeFiles } from '../helpers/cli.js';
import { editDistance, suggest } from '../../src/cli/args.js';
import { lineColumn } from '../../src/wire/position.js';
import { OPTIONS } from '../../src/cli/mcp-proxy.js';

const MANIFEST = 'version: 1\nrelease: flags-test@1\ntools: {}\n';

test('a mistyped flag is exit 2 with the flag it resembles', () => {
  for (const [argv, wanted] of [
    [['mcp-proxy', '--manfest', 'm.yaml', '--', 'x'], '--manifest'],
    [['mcp-proxy', '--polcy=p.cedar', '--', 'x'], '--policy'],
    [['mcp-proxy', '--call-timout', '5s', '--', 'x'], '--call-timeout'],
    [['init', '--hoem', '/tmp/x'], '--home'],
    [['verify', '--publickey', 'k.pem'], '--public-key'],
  ] as const) {
    const r = cloakpipe([...argv]);
    assert.equal(r.status, 2, argv.join(' '));
    assert.match(r.stderr, new RegExp(`unknown option ${argv.find((a) => a.startsWith('--') && !a.startsWith(wanted))!.split('=')[0]} \\(did you mean ${wanted}\\?\\)`), r.stderr);
  }
  // Nothing plausible: no made-up suggestion.
  const r = cloakpipe(['init', '--zzzzzzzz']);
  assert.equal(r.status, 2);
  assert.match(r.stderr, /unknown option --zzzzzzzz\n/);
});

test('http-proxy refuses --server (not on the HTTP door yet) instead of ignoring it', () => {
  for (const flag of [['--server', 'x']]) {
    const r = cloakpipe(['http-proxy', ...flag, '--manifest', 'm.yaml', '--policy', 'p.cedar', '--', 'x']);
    assert.equal(r.status, 2, r.stderr);
    assert.match(r.stderr, new RegExp(`unknown option ${flag[0]}`));
  }
});

test('a mistyped command is exit 2 with the command it resembles', () => {
  const r = cloakpipe(['verfiy']);
  assert.equal(r.status, 2);
  assert.match(r.stderr, /unknown command "verfiy" \(did you mean "verify"\?\)/);
});

test('suggestions: transpositions count as one edit, and far words get none', () => {
  assert.equal(editDistance('manfiest', 'manifest'), 1);
  assert.equal(editDistance('', 'abc'), 3);
  assert.equal(suggest('polciy', ['policy', 'manifest']), 'policy');
  assert.equal(suggest('approver', ['approver-key', 'agent']), 'approver-key'); // a unique prefix
  assert.equal(suggest('x', ['policy', 'manifest']), undefined);
});

test('--version prints the version in package.json', () => {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
  for (const flag of ['--version', '-V']) {
    const r = cloakpipe([flag]);
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stdout, `cloakpipe ${pkg.version}\n`);
  }
});

test('mcp-proxy --help lists every option, its value and its default', () => {
  const r = cloakpipe(['mcp-proxy', '--help']);
  assert.equal(r.status, 0);
  const expected: [string, string | null][] = [
    ['--manifest FILE', null],
    ['--policy FILE', null],
    ['--context FILE', 'none'],
    ['--mode enforce|shadow', 'enforce'],
    ['--approver-key PEM', 'none'],
    ['--anchor-interval DURATION', 'at shutdown only'],
    ['--tsa URL', 'none'],
    ['--tsa-root PEM', null],
    ['--rekor URL', 'none'],
    ['--rekor-key PEM', null],
    ['--home DIR', '$CLOAKPIPE_HOME or ~/.cloakpipe'],
    ['--agent ID', "task.agent, else 'agent'"],
    ['--call-timeout DURATION', '60s'],
    ['--max-frame BYTES', '4194304'],
    ['--upstream "CMD ARGS"', null],
    ['--config FILE', null],
  ];
  for (const [head, dflt] of expected) {
    const at = r.stdout.indexOf(`  ${head}`);
    assert.ok(at >= 0, `--help lists ${head}`);
    const entry = r.stdout.slice(at, r.stdout.indexOf('\n  --', at + 1));
    if (dflt) assert.ok(entry.includes(`[default: ${dflt}`), `${head} shows its default ${dflt}: ${entry}`);
  }
  // Every flag the parser takes is listed with what it does (a flag added later cannot hide).
  for (const [name, o] of Object.entries(OPTIONS)) {
    assert.match(r.stdout, new RegExp(`^  --${name}\\b`, 'm'), `--help lists --${name}`);
    assert.ok((o as { help?: string }).help, `--${name} says what it does`);
  }
  // Every flag the help names is one the parser accepts (no stale help): an accepted flag fails
  // later (or not at all), never as an unknown option.
  for (const [, flag] of r.stdout.matchAll(/^ {2}(--[a-z-]+)/gm)) {
    if (flag === '--help') continue;
    const probe = cloakpipe(['mcp-proxy', flag, ...(flag === '--upstream' ? [] : ['v']), '--help']);
    assert.doesNotMatch(probe.stderr, /unknown option/, flag);
  }
});

test('mcp-proxy without -- and with the upstream as stray words says how to name the upstream', () => {
  const f = writeFiles({ 'm.yaml': MANIFEST, 'p.cedar': PERMIT_ALL });
  const r = cloakpipe(['mcp-proxy', '--manifest', f['m.yaml'], '--policy', f['p.cedar'], 'node', 'server.js']);
  assert.equal(r.status, 2);
  assert.match(r.stderr, /after --, or with --upstream "CMD ARGS" or --config FILE/);
});

test('a task context that is not strict JSON is named with line and column, without its contents', () => {
  const cases: [string, RegExp][] = [
    ['{\n  "task": {"id": "T-1",\n    "secret": "hunter2-value"\n  },\n  "task": {}\n}\n', /line 5, column 3: the same key appears twice/],
    ['{"task": {"id": "T-1"},\n "sensitivity": "internal",\n}\n', /line 3, column 1: expected a string key/],
    ['\n\n  {"task": {"n": 1e400}}', /line 3, column 18: number (exponent out of range|is not finite)/],
    ['{"task": {"name": "Zoë 😀", "x": tru}}', /line 1, column 33: unexpected character/],
    ['{"task":\r\n  {"id": "T-1"}\r\n  "x": 1}', /line 3, column 3: expected ',' or '}'/],
  ];
  for (const [text, expected] of cases) {
    const f = writeFiles({ 'm.yaml': MANIFEST, 'p.cedar': PERMIT_ALL, 'c.json': text });
    const r = cloakpipe(['mcp-proxy', '--home', makeHome(), '--manifest', f['m.yaml'], '--policy', f['p.cedar'], '--context', f['c.json'], '--', process.execPath, '-e', '']);
    assert.equal(r.status, 2, r.stderr);
    assert.match(r.stderr, /task context .*c\.json is not strict JSON: /);
    assert.match(r.stderr, expected, JSON.stringify(text));
    assert.doesNotMatch(r.stderr, /hunter2|Zoë/);
  }
});

test('line and column count lines from 1 and columns in code points', () => {
  assert.deepEqual(lineColumn('ab', 0), { line: 1, column: 1 });
  assert.deepEqual(lineColumn('a\nbc', 3), { line: 2, column: 2 });
  assert.deepEqual(lineColumn('😀x', 2), { line: 1, column: 2 }); // a surrogate pair is one column
});

test('a bad duration is exit 2 naming its flag, on every command that takes one', () => {
  const home = makeHome();
  const image = 'sha256:' + 'a'.repeat(64);
  const cases: [string[], string][] = [
    [['mcp-proxy', '--home', home, '--call-timeout', 'soon', '--', 'x'], '--call-timeout'],
    [['mcp-proxy', '--home', home, '--anchor-interval', '0s', '--', 'x'], '--anchor-interval'],
    [['mcp-proxy', '--home', home, '--manifest', 'm.yaml', '--policy', 'p.cedar', '--request-ttl', '5', '--', 'x'], '--request-ttl'],
    [['http-proxy', '--home', home, '--session-idle', '5', '--', 'x'], '--session-idle'],
    [['http-proxy', '--home', home, '--call-timeout', '5', '--', 'x'], '--call-timeout'],
    [['llm-proxy', '--home', home, '--upstream-url', 'http://127.0.0.1:1', '--call-timeout', '5'], '--call-timeout'],
    [['llm-proxy', '--home', home, '--upstream-url', 'http://127.0.0.1:1', '--stream-timeout', '5'], '--stream-timeout'],
    [['confine', '--context', 'c.json', '--input', 'i.jsonl', '--image', image, '--aliases', 'a.json', '--manifest', 'm.yaml', '--policy', 'p.cedar', '--timeout', '5', '--', 'x'], '--timeout'],
    [['ledger', 'anchor', '--home', home, '--timeout', '1d'], '--timeout'],
    [['approve', '--fingerprint', 'sha256:00', '--key', 'k.pem', '--ttl', '10x'], '--ttl'],
    [['manifest', 'draft', '--timeout', 'forever', '--', 'x'], '--timeout'],
    [['wrap', '--home', home, '--host', join(home, 'none', 'mcp.json'), '--timeout', 'forever'], '--timeout'],
    [['shadow', 'report', '--home', home, '--since', 'yesterday'], '--since'],
    [['inbox', 'serve', '--home', home, '--approver-key', 'k.pem', '--ttl', '5'], '--ttl'],
  ];
  for (const [argv, flag] of cases) {
    const r = cloakpipe(argv);
    assert.equal(r.status, 2, `${argv.join(' ')}: ${r.stderr}`);
    const value = argv[argv.indexOf(flag) + 1];
    assert.match(r.stderr, new RegExp(`^cloakpipe \\w[\\w-]*: ${flag}: (invalid duration |duration must be positive: )"${value}"`), argv.join(' '));
  }
});

test('a duration that arms a timer is at most 596h, on every command: Node fires a longer timer after 1 ms', () => {
  const home = makeHome();
  const image = 'sha256:' + 'a'.repeat(64);
  const f = writeFiles({ 'm.yaml': MANIFEST, 'p.cedar': PERMIT_ALL });
  const rules = ['--manifest', f['m.yaml'], '--policy', f['p.cedar']];
  const cases: [string[], string][] = [
    [['mcp-proxy', '--home', home, ...rules, '--call-timeout', '597h', '--', 'x'], '--call-timeout'],
    [['mcp-proxy', '--home', home, ...rules, '--anchor-interval', '597h', '--', 'x'], '--anchor-interval'],
    [['llm-proxy', '--home', home, ...rules, '--upstream-url', 'http://127.0.0.1:1', '--call-timeout', '597h'], '--call-timeout'],
    [['llm-proxy', '--home', home, ...rules, '--upstream-url', 'http://127.0.0.1:1', '--stream-timeout', '597h'], '--stream-timeout'],
    [['confine', '--context', 'c.json', '--input', 'i.jsonl', '--image', image, '--aliases', 'a.json', ...rules, '--timeout', '597h', '--', 'x'], '--timeout'],
    [['ledger', 'anchor', '--home', home, '--timeout', '597h'], '--timeout'],
    [['manifest', 'draft', '--timeout', '597h', '--', 'x'], '--timeout'],
    [['wrap', '--home', home, '--host', join(home, 'none', 'mcp.json'), '--timeout', '597h'], '--timeout'],
  ];
  for (const [argv, flag] of cases) {
    const r = cloakpipe(argv);
    assert.equal(r.status, 2, `${argv.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, new RegExp(`^cloakpipe \\w[\\w-]*: ${flag}: at most 596h`), argv.join(' '));
  }
  // 596h is a timer Node can arm: accepted (the command then fails on what else it lacks).
  const ok = cloakpipe(['mcp-proxy', '--home', home, ...rules, '--call-timeout', '596h', '--', 'x']);
  assert.doesNotMatch(ok.stderr, /at most 596h/);
});
