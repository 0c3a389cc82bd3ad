// cloakpipe approve: a person signs a receipt for one exact call (product.md section 5). With
// --call it first shows what is approved (tool, arguments, task) and asks on the terminal; the
// receipt is then bound to that call's fingerprint, valid for --ttl, and usable once.
import { closeSync, createReadStream, mkdirSync, openSync } from 'node:fs';
import { atomicWrite } from '../util/atomic-write.js';
import { KeyObject } from 'node:crypto';
import { KeyError, loadEd25519PrivateKey } from '../ledger/keys.js';
import { SignerUnavailable, type Signer } from '../core/signer.js';
import { isPkcs11Uri } from '../keys/uri.js';
import { openTokenSigner, TokenError } from '../keys/token.js';
import { EXIT_TOKEN_HELD } from '../keys/exit-status.js';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { duration, parseFlags, UsageError } from './args.js';
import { callFingerprint, readCallFile, readContextFlag } from './fingerprint.js';
import { isDigest, type Digest } from '../core/digest.js';
import { receiptId, signReceipt, type Receipt } from '../approvals/receipt.js';
import { resolveHome } from '../store/home.js';
import { visible } from './visible.js';
import { OutputClosed, sayTo, writeOutput } from '../util/out/index.js';

export const MAX_TTL_MS = 24 * 3_600_000;

const HELP = `usage: cloakpipe approve --key PEM|pkcs11:URI [--pin-file FILE] (--fingerprint FP | --call FILE [--context FILE])
                         [--ttl 15m] [--out FILE | --home DIR] [--yes] [--json]

Sign an approval receipt for one exact call. The gate accepts it once, for that call only,
until it expires.

  --key PEM          the approver's Ed25519 private key (cloakpipe keygen; mode 0600), or
                     pkcs11:URI, the key inside a PKCS#11 token (keygen --key pkcs11:… makes it)
  --pin-file FILE    the token's PIN (mode 0600; default: $CLOAKPIPE_PKCS11_PIN)
  --fingerprint FP   approve the call with this fingerprint (from an approval_required refusal)
  --call FILE        approve this call ({"tool", "arguments"}); its tool, arguments and task
                     are shown and you are asked to confirm on the terminal
  --context FILE     the task context the call belongs to (its task.id is part of the fingerprint)
  --ttl DURATION     how long the receipt is valid (default 15m, at most 24h)
  --out FILE         write the receipt to FILE (replaced whole; a new file is 0600); default: stdout
  --home DIR         drop the receipt into DIR/approvals/, the gate's inbox
  --yes              confirm without asking. Required with --call when there is no terminal:
                     without a terminal nobody can be shown the call, so approve refuses to
                     guess (exit 2).
  --json             with --out or --home, print {"receipt","path","fingerprint","expires_at"}

Exit status: 0 signed, 1 not confirmed, 2 usage or configuration error,
${EXIT_TOKEN_HELD}.
`;

/**
 * An approver's key: a key file, or a key inside a PKCS#11 token (pkcs11:URI) with its PIN from
 * `pinFile` or CLOAKPIPE_PKCS11_PIN. Shared with inbox serve, whose flags are named apart from the
 * gate key's (`flags`).
 */
export function loadApproverKey(
  path: string,
  pinFile: string | undefined,
  flags: { key: string; pinFile: string } = { key: '--key', pinFile: '--pin-file' },
  opts: { log?: (line: string) => void } = {},
): KeyObject | Signer {
  if (pinFile !== undefined && !isPkcs11Uri(path)) throw new UsageError(`${flags.pinFile} goes with ${flags.key} pkcs11:…`);
  try {
    if (isPkcs11Uri(path)) return openTokenSigner(path, pinFile, { log: opts.log, role: 'the approver key', maker: 'cloakpipe keygen --key …', pinFlag: flags.pinFile });
    return loadEd25519PrivateKey(path, 'approver key', 'an Ed25519 private key PEM, from cloakpipe keygen');
  } catch (e) {
    if (e instanceof KeyError || e instanceof TokenError) throw new UsageError(`approver key: ${e.message}`);
    throw e;
  }
}

/**
 * JSON for a terminal: JSON.stringify escapes C0 controls; this also escapes every character a
 * terminal draws as nothing or that moves others (DEL and C1 controls, format characters: bidi,
 * zero-width, the tags U+E0000-E007F that spell ASCII no one sees; line separators;
 * default-ignorables: variation selectors, fillers), as the inbox page does, so model-chosen
 * text cannot redraw or hide what the person approves, and two calls cannot look the same.
 */
export function displayJson(v: unknown): string {
  // Line by line: the indentation's line breaks stay (a newline inside a string is written \n).
  return JSON.stringify(v, null, 2).split('\n').map(visible).join('\n');
}

async function confirm(question: string): Promise<boolean> {
  // Read the answer from the terminal itself, not from whatever stdin was redirected from.
  const input = process.stdin.isTTY ? process.stdin : createReadStream('/dev/tty');
  const rl = createInterface({ input, output: process.stderr, terminal: true });
  try {
    const answer = await new Promise<string>((resolve) => {
      rl.question(question, resolve);
      rl.once('close', () => resolve(''));
    });
    return /^y(es)?$/i.test(answer.trim());
  } finally {
    rl.close();
    if (input !== process.stdin) (input as ReturnType<typeof createReadStream>).destroy();
  }
}

export async function run(argv: string[]): Promise<number> {
  const { values: v } = parseFlags(argv, {
    key: { type: 'string' },
    'pin-file': { type: 'string' },
    fingerprint: { type: 'string' },
    call: { type: 'string' },
    context: { type: 'string' },
    ttl: { type: 'string' },
    out: { type: 'string' },
    home: { type: 'string' },
    yes: { type: 'boolean' },
    json: { type: 'boolean' },
  });
  if (v.help) {
    process.stdout.write(HELP);
    return 0;
  }
  const keyPath = v.key as string | undefined;
  if (!keyPath) throw new UsageError('missing required --key');
  const fpFlag = v.fingerprint as string | undefined;
  const callPath = v.call as string | undefined;
  if ((fpFlag === undefined) === (callPath === undefined)) throw new UsageError('give exactly one of --fingerprint and --call');
  if (v.context !== undefined && callPath === undefined) throw new UsageError('--context goes with --call');
  if (v.out !== undefined && v.home !== undefined) throw new UsageError('give at most one of --out and --home');
  const ttlMs = duration((v.ttl as string | undefined) ?? '15m', '--ttl');
  if (ttlMs > MAX_TTL_MS) throw new UsageError('--ttl is at most 24h: an approval is for a call about to happen');
  const privateKey = loadApproverKey(keyPath, v['pin-file'] as string | undefined);

  let fingerprint: Digest;
  if (fpFlag !== undefined) {
    if (!isDigest(fpFlag)) throw new UsageError('--fingerprint must be sha256:<64 lowercase hex>');
    fingerprint = fpFlag;
  } else {
    const call = readCallFile(callPath!);
    const ctx = readContextFlag(v.context as string | undefined);
    fingerprint = callFingerprint(call, ctx);
    const interactive = !v.yes && Boolean(process.stderr.isTTY) && (Boolean(process.stdin.isTTY) || hasTty());
    if (!v.yes && !interactive)
      throw new UsageError('no terminal to confirm on: review the call and pass --yes to approve it without asking');
    process.stderr.write(
      `You are approving one call:\n` +
        `  tool:        ${displayJson(call.tool)}\n` +
        `  arguments:   ${displayJson(call.arguments).replace(/\n/g, '\n               ')}\n` +
        `  task:        ${Object.keys(ctx.task).length === 0 ? '(no task)' : displayJson(ctx.task).replace(/\n/g, '\n               ')}\n` +
        `  fingerprint: ${fingerprint}\n` +
        `  valid for:   ${(v.ttl as string | undefined) ?? '15m'}, once\n`,
    );
    if (interactive && !(await confirm('Approve this exact call? [y/N] '))) {
      process.stderr.write('not approved\n');
      return 1;
    }
  }

  let receipt: Receipt;
  try {
    receipt = signReceipt({ privateKey, fingerprint, issuedAt: Date.now(), ttlMs });
  } catch (e) {
    if (e instanceof SignerUnavailable) throw new UsageError(`approver key: ${e.message}`);
    throw e;
  } finally {
    if (!(privateKey instanceof KeyObject)) privateKey.close();
  }
  const text = JSON.stringify(receipt) + '\n';
  let path: string | null = null;
  if (v.out !== undefined) {
    path = v.out as string;
    try {
      // As every --out: replaced whole or not at all. A receipt lets a call run: a new file is 0600.
      await writeOutput(path, text, 0o600);
    } catch (e) {
      if (e instanceof OutputClosed) throw e;
      throw new UsageError(`cannot write ${path}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
    }
  } else if (v.home !== undefined) {
    const dir = resolveHome(v.home as string).approvals;
    try {
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      // Written whole under a name the gate ignores, synced, then renamed: the gate never reads
      // half a receipt (one write could be cut short: a full disk, a file size limit).
      path = join(dir, `${receipt.nonce}.json`);
      atomicWrite(path, text, 0o600);
    } catch (e) {
      throw new UsageError(`cannot write into ${dir}: ${(e as NodeJS.ErrnoException).code ?? 'error'}`);
    }
  }
  // With --out /dev/stdout the receipt is stdout's: what approve says goes to stderr.
  const say = sayTo(v.out as string | undefined);
  if (path === null) process.stdout.write(text);
  else if (v.json) say.write(JSON.stringify({ receipt: receiptId(receipt), path, fingerprint, expires_at: receipt.expires_at }) + '\n');
  else say.write(`${path}\n`);
  return 0;
}

function hasTty(): boolean {
  try {
    closeSync(openSync('/dev/tty', 'r'));
    return true;
  } catch {
    return false;
  }
}
