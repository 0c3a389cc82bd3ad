// Anchor checks on inputs built to be slow: CPU time (user + system, this process) to refuse or
// verify a genuine RFC 3161 token whose unsigned certificate bag holds 20,000 parseable
// certificates (10 MB), and a genuine Rekor entry (v1 and v2) whose checkpoint repeats its
// signature line 100,000 times; each beside the unstuffed original. The tests only assert the
// verdict (refused or verified); this prints the time, which should grow no faster than the input.
// Usage: node dist/bench/anchor-bounds.js [--certs 20000] [--lines 100000] [--runs 3]
import { parseArgs } from 'node:util';
import { verifyTsaToken } from '../src/ledger/anchors/tsa/verify.js';
import { verifyRekorEntry } from '../src/ledger/anchors/rekor/verify.js';
import { AnchorError } from '../src/ledger/anchors/errors.js';
import { parseDer } from '../src/ledger/anchors/der.js';
import { TSA_TOKENS, REKOR_V2_ENTRIES, REKOR_V2_KEY, fixtureBytes, fixtureText } from '../test/helpers/public-log.js';
import { parseableCopies, withCertificateBag } from '../test/helpers/stuffed-token.js';
import { machine, section, table } from './lib.js';

const { values } = parseArgs({ options: { certs: { type: 'string', default: '20000' }, lines: { type: 'string', default: '100000' }, runs: { type: 'string', default: '3' } } });
const runs = Number(values.runs);

async function cpu(f: () => unknown): Promise<{ ms: number; verdict: string }> {
  let best = Infinity;
  let verdict = '';
  for (let i = 0; i < runs; i++) {
    const t0 = process.cpuUsage();
    try {
      await f();
      verdict = 'verified';
    } catch (e) {
      if (!(e instanceof AnchorError)) throw e;
      verdict = `refused (${e.code})`;
    }
    const d = process.cpuUsage(t0);
    best = Math.min(best, (d.user + d.system) / 1000);
  }
  return { ms: best, verdict };
}

const rows: (string | number)[][] = [];
const F = TSA_TOKENS[2]; // freetsa: embeds its two certificates
const token = fixtureBytes(F.token);
const chain = fixtureText(F.chain);
const digest = `sha256:${F.meta.messageImprintHex}`;
const embedded = parseDer(token).children[1].children[0].children.find((c) => c.tag === 0xa0)!.children.map((c) => c.bytes);
const stuffed = withCertificateBag(token, [...embedded, ...parseableCopies(embedded[0], Number(values.certs))]);
const repeats = withCertificateBag(token, Array.from({ length: 16 }, (_, i) => embedded[i % 2]));
for (const [what, der] of [
  ['RFC 3161 token, genuine', token],
  ['RFC 3161 token, its 2 certificates repeated to 16 (the bag limit)', repeats],
  [`RFC 3161 token, ${values.certs} certificates in the bag`, stuffed],
] as const) {
  const r = await cpu(() => verifyTsaToken(der, chain, { digest }));
  rows.push([what, (der.length / 1e6).toFixed(2), r.ms.toFixed(1), r.verdict]);
}

const stuff = (text: string, n: number): string => {
  const e = JSON.parse(text);
  const cp: string = e.inclusionProof.checkpoint;
  const i = cp.indexOf('\n\n');
  const line = cp.slice(i + 2, -1).split('\n')[0];
  e.inclusionProof.checkpoint = `${cp.slice(0, i + 1)}\n${Array(n).fill(line).join('\n')}\n`;
  return JSON.stringify(e);
};
for (const [label, name, key] of [
  ['Rekor v1 entry', 'rekor-entry-1.json', fixtureText('rekor-public.pem')],
  ['Rekor v2 entry', REKOR_V2_ENTRIES[0], fixtureText(REKOR_V2_KEY)],
] as const) {
  const genuine = fixtureText(name);
  const big = stuff(genuine, Number(values.lines));
  for (const [what, text] of [[`${label}, genuine`, genuine], [`${label}, checkpoint with ${values.lines} signature lines`, big]] as const) {
    const r = await cpu(() => verifyRekorEntry(text, key));
    rows.push([what, (Buffer.byteLength(text) / 1e6).toFixed(2), r.ms.toFixed(1), r.verdict]);
  }
}

process.stdout.write(`# anchor checks on stuffed input\n\n${machine()}\n`);
section('CPU time (best of ' + runs + ')', table(['input', 'MB', 'CPU ms', 'verdict'], rows));
