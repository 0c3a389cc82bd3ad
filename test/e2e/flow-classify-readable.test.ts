// A classify rule reads a result as the model reads it: a marker split by an invisible character
// (zero-width space, soft hyphen, a bidi control), written in compatibility forms (fullwidth or
// mathematical digits and letters) or in Unicode tag characters (invisible, read as ASCII by
// models) still matches. Before, each went past the rule and the public sink stayed open. The
// real gate binary in front of server-everything, whose echo returns what it is given.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EVERYTHING, fixtureFiles, PERMIT_ALL } from '../helpers/cli.js';
import { call, ledgerOf, startGate, summary } from '../helpers/gate.js';

const MANIFEST = `version: 1
release: flow-classify-readable@1
labels: [public, internal, confidential]
tools:
  echo: { effect: read, accepts: confidential, arguments: { message: { type: string, max_len: 200, required: true } } }
  get-sum: { effect: read, accepts: public, arguments: { a: { type: number, required: true }, b: { type: number, required: true } } }
classify:
  - { label: confidential, pattern: "ACCT-[0-9]{8}" }
  - { label: internal, pattern: "(?i)internal use only" }
`;

const tags = (s: string) => [...s].map((c) => String.fromCodePoint(0xe0000 + c.charCodeAt(0))).join('');

/** The label the session is at once echo returned `message`, and whether get-sum (accepts public) is still served. */
async function afterEcho(message: string) {
  const f = fixtureFiles('cloakpipe-readable-', { manifest: MANIFEST, policy: PERMIT_ALL, context: { task: { id: 'T-readable' } } });
  const g = await startGate({ ...f, upstream: [process.execPath, EVERYTHING] });
  let sink: string;
  try {
    assert.equal(summary(await call(g, 'echo', { message })), 'ok');
    const after = await call(g, 'get-sum', { a: 1, b: 2 });
    sink = after.ok ? 'ok' : after.reason;
  } finally {
    await g.close();
  }
  return { sink, labels: ledgerOf(f.home).filter((e) => e.kind === 'label').map((e) => e.to) };
}

const HIDDEN: [string, string, string][] = [
  ['a zero-width space', 'account ACCT-1234\u200B5678', 'confidential'],
  ['a soft hyphen and a zero-width joiner', 'account AC\u00ADCT-12\u200D345678', 'confidential'],
  ['fullwidth letters and digits', 'account \uFF21\uFF23\uFF23\uFF34\uFF0D\uFF11\uFF12\uFF13\uFF14\uFF15\uFF16\uFF17\uFF18', 'confidential'],
  ['mathematical bold digits', 'account ACCT-\u{1D7CF}\u{1D7D0}\u{1D7D1}\u{1D7D2}\u{1D7D3}\u{1D7D4}\u{1D7D5}\u{1D7D6}', 'confidential'],
  ['Unicode tag characters', `weather is fine${tags('ACCT-12345678')}`, 'confidential'],
  ['a right-to-left mark inside a phrase', 'For Internal\u200F Use Only', 'internal'],
  // UTS #39 confusables: before, each of these raised nothing.
  ['Cyrillic letters that look Latin', 'account \u0410\u0421\u0421\u0422-12345678', 'confidential'],
  ['Greek letters that look Latin', 'account \u0391CC\u03A4-12345678', 'confidential'],
  ['Cyrillic lower-case look-alikes in a phrase', 'for int\u0435rnal us\u0435 \u043Enly', 'internal'],
];

for (const [what, message, label] of HIDDEN) {
  test(`a marker hidden by ${what} still raises the label; the public sink is refused`, { timeout: 120_000 }, async () => {
    const r = await afterEcho(message);
    assert.deepEqual(r.labels, [label]);
    assert.equal(r.sink, 'sink_ceiling_exceeded');
  });
}

test('text that only looks close to a marker raises nothing (control)', { timeout: 120_000 }, async () => {
  const r = await afterEcho('account ACCT-1234 5678, caf\u00E9 \u00BD, \u0441\u0447\u0451\u0442 \u0410\u0421\u0421\u0422-1234, \u03B1\u03B2\u03B3');
  assert.deepEqual(r.labels, []);
  assert.equal(r.sink, 'ok');
});
