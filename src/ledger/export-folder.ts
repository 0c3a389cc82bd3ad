// The folder `ledger export --all` writes, one NAME.jsonl a gate: what it holds must be this
// export's, or be named as not. An earlier export of a gate this run does not write (a forged
// registration it skips, a gate no longer registered, another store's gate) is renamed
// NAME.jsonl.stale: kept as evidence of what it was, never read as current beside the new files.
import { closeSync, constants, lstatSync, openSync, readdirSync, readSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import { GATE_ID } from '../store/target.js';
import { EXPORT_FORMAT } from './export.js';

/** Renames DIR/NAME.jsonl to NAME.jsonl.stale when it is there; returns its new path. */
export function markStale(dir: string, gateId: string): string | null {
  if (!GATE_ID.test(gateId)) return null; // not a file name of ours
  const file = join(dir, `${gateId}.jsonl`);
  if (!isExport(file)) return null;
  renameSync(file, `${file}.stale`);
  return `${file}.stale`;
}

/**
 * Marks stale every export in `dir` of a gate not in `current` (the gates this run exports);
 * returns each gate's name and new path. Files that are not a ledger export are left alone.
 */
export function markStaleExcept(dir: string, current: ReadonlySet<string>): { gate: string; stale: string }[] {
  const out: { gate: string; stale: string }[] = [];
  for (const name of readdirSync(dir).sort()) {
    const gate = /^(.+)\.jsonl$/.exec(name)?.[1];
    if (gate === undefined || current.has(gate)) continue;
    const stale = markStale(dir, gate);
    if (stale) out.push({ gate, stale });
  }
  return out;
}

/** A regular file (not followed through a link) whose first line is an export's header. */
function isExport(file: string): boolean {
  try {
    if (!lstatSync(file).isFile()) return false;
  } catch {
    return false;
  }
  // The header is a few hundred bytes: read a bounded head, never the whole export.
  const fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  try {
    const head = Buffer.alloc(64 * 1024);
    const n = readSync(fd, head, 0, head.length, 0);
    const line = head.subarray(0, n).toString('utf8').split('\n', 1)[0]!;
    return (JSON.parse(line) as { format?: unknown }).format === EXPORT_FORMAT;
  } catch {
    return false;
  } finally {
    closeSync(fd);
  }
}
