// `cloakpipe anchor verify`: one Rekor entry or RFC 3161 token, offline, with the same code the
// ledger's `verify` uses. Exit 0 valid, 1 invalid (reason code and one line), 2 usage error.
import { readFileSync } from 'node:fs';
import { parseFlags, UsageError } from './args.js';
import { AnchorError } from '../ledger/anchors/errors.js';
import { parseDigest } from '../ledger/anchors/encoding.js';
import { verifyRekorEntry, type RekorSummary } from '../ledger/anchors/rekor/verify.js';
import { verifyTsaToken, type TsaSummary } from '../ledger/anchors/tsa/verify.js';
import { holdsPrivateKey, privateKeyRefusal } from '../keys/public.js';

const HELP = `usage: cloakpipe anchor verify (--rekor-entry FILE --rekor-key PEM | --tsa-token FILE --tsa-root PEM)
                               [--digest sha256:HEX] [--public-key PEM] [--json]

Checks one anchor offline.
  --rekor-entry FILE  a Rekor entry (canonicalizedBody, integratedTime, logIndex, logID,
                      signedEntryTimestamp, inclusionProof with its signed checkpoint); a Rekor
                      v2 (tlog-tiles) entry has integratedTime null and no signedEntryTimestamp:
                      its signed checkpoint is the proof
  --rekor-key PEM     the log's public key
  --tsa-token FILE    an RFC 3161 TimeStampToken or TimeStampResp (DER)
  --tsa-root PEM      the TSA chain: signing certificate first, self-signed root last
                      (or only the root when the token embeds the rest)
  --digest ALG:HEX    also require that the anchor commits to this digest (sha256/sha384/sha512);
                      for an Ed25519ph hashedrekord or an epoch dsse entry, sha256:ROOT also
                      matches the epoch root it signs
  --public-key PEM    (Rekor) also require an entry signed by this Ed25519 key: a hashedrekord
                      (Ed25519ph), or a dsse epoch envelope (a token key without Ed25519ph;
                      needs --digest sha256:ROOT)
  --json              machine-readable result
Exit 0 valid, 1 invalid, 2 usage error.
`;

function readFile(path: string, what: string): Buffer {
  try {
    return readFileSync(path);
  } catch (e) {
    throw new UsageError(`cannot read ${what} ${path}: ${(e as NodeJS.ErrnoException).code ?? 'error'}`);
  }
}

/** A public key's PEM: a private key given instead is refused, never printed. */
function readPublic(path: string, what: string): string {
  const text = readFile(path, what).toString('utf8');
  if (holdsPrivateKey(text)) throw new UsageError(privateKeyRefusal(`${what} ${path}`));
  return text;
}

function rekorLines(s: RekorSummary): string[] {
  return [
    `rekor entry: valid (${s.logVersion === 2 ? 'Rekor v2, tlog-tiles' : 'Rekor v1'})`,
    `  log id          ${s.logID}`,
    `  log index       ${s.logIndex} (tree index ${s.treeIndex} of ${s.treeSize})`,
    s.integratedTime === null
      ? '  integrated      (none: a v2 entry states no time; it comes from the RFC 3161 token)'
      : `  integrated      ${new Date(s.integratedTime * 1000).toISOString()} (${s.integratedTime})`,
    `  checkpoint      ${s.checkpointOrigin}, root ${s.rootHash}`,
    `  body            ${s.kind} ${s.apiVersion}${s.recordedDigests.length ? ', ' + s.recordedDigests.join(', ') : ''}`,
    `  checked         log id, ${s.logVersion === 2 ? '' : 'signed entry timestamp, '}inclusion proof, checkpoint signature` +
      (s.bodySignature === 'verified' ? `, body signature (${s.kind === 'dsse' ? 'Ed25519 over the epoch envelope' : 'Ed25519ph'})` : '') +
      (s.digest ? `, digest ${s.digest} (${s.digestMatched})` : ''),
  ];
}

function tsaLines(s: TsaSummary): string[] {
  return [
    'rfc3161 token: valid',
    `  tsa             ${s.tsa}`,
    `  chain           ${s.chain.join(' <- ')}`,
    `  genTime         ${s.genTime}`,
    `  imprint         ${s.imprint}`,
    `  serial          ${s.serialNumber}${s.nonce ? `, nonce ${s.nonce}` : ''}`,
    `  checked         CMS signature, messageDigest, ESS certificate id, chain at genTime, timeStamping EKU` +
      (s.digest ? `, imprint = ${s.digest}` : ''),
  ];
}

export async function run(argv: string[]): Promise<number> {
  const [sub, ...rest] = argv;
  if (sub === '--help' || sub === '-h' || sub === undefined) {
    process.stdout.write(HELP);
    return sub === undefined ? 2 : 0;
  }
  if (sub !== 'verify') throw new UsageError(`unknown subcommand "${sub}" (expected: verify)`);
  const { values } = parseFlags(rest, {
    'rekor-entry': { type: 'string' },
    'rekor-key': { type: 'string' },
    'tsa-token': { type: 'string' },
    'tsa-root': { type: 'string' },
    digest: { type: 'string' },
    'public-key': { type: 'string' },
    json: { type: 'boolean' },
  });
  if (values.help) {
    process.stdout.write(HELP);
    return 0;
  }
  const rekor = values['rekor-entry'] !== undefined || values['rekor-key'] !== undefined;
  const tsa = values['tsa-token'] !== undefined || values['tsa-root'] !== undefined;
  if (rekor === tsa) throw new UsageError('give either --rekor-entry with --rekor-key, or --tsa-token with --tsa-root');
  if (rekor && (!values['rekor-entry'] || !values['rekor-key'])) throw new UsageError('--rekor-entry and --rekor-key go together');
  if (tsa && (!values['tsa-token'] || !values['tsa-root'])) throw new UsageError('--tsa-token and --tsa-root go together');
  if (tsa && values['public-key'] !== undefined) throw new UsageError('--public-key applies to Rekor entries');
  const digest = values.digest === undefined ? undefined : parseDigest(values.digest);
  if (values.digest !== undefined && !digest) throw new UsageError('--digest: expected sha256:HEX (or sha384:/sha512:), lower-case hex of the right length');
  const json = values.json === true;
  try {
    let summary: RekorSummary | TsaSummary;
    let lines: string[];
    if (rekor) {
      const entry = readFile(values['rekor-entry']!, 'Rekor entry');
      const key = readPublic(values['rekor-key']!, 'Rekor key');
      const signer = values['public-key'] ? readPublic(values['public-key'], 'public key') : undefined;
      const s = verifyRekorEntry(entry, key, { digest: digest ?? undefined, signer });
      summary = s;
      lines = rekorLines(s);
    } else {
      const token = readFile(values['tsa-token']!, 'TSA token');
      const root = readFile(values['tsa-root']!, 'TSA root').toString('utf8');
      const s = await verifyTsaToken(token, root, { digest: digest ?? undefined });
      summary = s;
      lines = tsaLines(s);
    }
    process.stdout.write(json ? JSON.stringify({ valid: true, type: rekor ? 'rekor' : 'rfc3161', ...summary }) + '\n' : lines.join('\n') + '\n');
    return 0;
  } catch (e) {
    if (!(e instanceof AnchorError)) throw e;
    if (e.code === 'key_invalid') throw new UsageError(e.message);
    if (json) process.stdout.write(JSON.stringify({ valid: false, type: rekor ? 'rekor' : 'rfc3161', reason: e.code, detail: e.message }) + '\n');
    else process.stdout.write(`${rekor ? 'rekor entry' : 'rfc3161 token'}: INVALID (${e.code}): ${e.message}\n`);
    return 1;
  }
}
