// The approvals inbox: `$CLOAKPIPE_HOME/approvals/*.json`, where `cloakpipe approve --home`
// drops receipts so a host need not carry them. Guards the gate against its own inbox: anyone
// who can write there can put anything there, so reading is bounded (file count, file size,
// regular files only, strict JSON) and never throws. A file found here is only a candidate:
// the approval check verifies it like any other receipt.
import { lstatSync, readdirSync } from 'node:fs';
import { readBoundedFile } from '../util/regular-file.js';
import { join } from 'node:path';
import { parseStrict } from '../wire/strict-parse.js';
import { isJsonObject, type JsonValue } from '../core/json.js';
import type { Digest } from '../core/digest.js';

export const INBOX_MAX_FILES = 1000;
export const INBOX_MAX_BYTES = 8 * 1024;
const NAME = /^[A-Za-z0-9._-]{1,128}\.json$/;

interface Cached {
  stamp: string;
  value: JsonValue | undefined; // undefined: unreadable or not JSON
}

export class Inbox {
  private cache = new Map<string, Cached>();

  constructor(
    readonly dir: string,
    private readonly limits = { maxFiles: INBOX_MAX_FILES, maxBytes: INBOX_MAX_BYTES },
  ) {}

  /** Receipt-shaped candidates whose `fingerprint` field is this one, in file name order. */
  candidates(fingerprint: Digest): JsonValue[] {
    let names: string[];
    try {
      names = readdirSync(this.dir).filter((n) => NAME.test(n)).sort();
    } catch {
      return [];
    }
    if (names.length > this.limits.maxFiles) names = names.slice(0, this.limits.maxFiles);
    const seen = new Set(names);
    for (const k of this.cache.keys()) if (!seen.has(k)) this.cache.delete(k);
    const out: JsonValue[] = [];
    for (const name of names) {
      const v = this.read(name);
      if (isJsonObject(v) && v.fingerprint === fingerprint) out.push(v);
    }
    return out;
  }

  private read(name: string): JsonValue | undefined {
    const path = join(this.dir, name);
    try {
      const st = lstatSync(path, { bigint: true });
      if (!st.isFile() || st.size > BigInt(this.limits.maxBytes)) return undefined;
      const hit = this.cache.get(name);
      if (hit && hit.stamp === stampOf(st)) return hit.value;
      // Checked again on the descriptor it is read from: what lstat saw may have been replaced
      // since by a FIFO (an open would wait for a writer, the gate with it), a link, a larger file.
      const read = readBoundedFile(path, this.limits.maxBytes, { followLinks: false });
      if (read === null) return undefined;
      let value: JsonValue | undefined;
      try {
        value = parseStrict(new TextDecoder('utf-8', { fatal: true }).decode(read.bytes).trim());
      } catch {
        value = undefined;
      }
      this.cache.set(name, { stamp: stampOf(read.stat), value });
      return value;
    } catch {
      return undefined;
    }
  }
}

const stampOf = (st: { ino: bigint; size: bigint; mtimeNs: bigint; ctimeNs: bigint }) => `${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}`;
