// A decision written aside before it commits, for the embedded store. Its ledger.db and the
// operations.db ATTACHed to it commit one after the other (WAL: each file atomically, the pair
// not; ADR 002): an inbox killed between them left the operator entry without the request taken
// and its receipt offered (the ledger said "approved", the gate never got a receipt, the page still
// showed the request, and a second approval signed a second receipt), or, the other way round, a
// receipt no entry records. The inbox completes what a note left here says as soon as its writer
// is gone: when it starts again, and while it runs, each time it reads the store (a note another
// inbox on the same home left, or its own whose completion failed): the half that committed
// decides. A note of a live writer is its decision in progress and is left alone. A note holds
// ids, digests and the signed receipt (what operations.db holds), never an argument value.
// PostgreSQL commits the pair as one: no notes.
import { closeSync, fsyncSync, mkdirSync, openSync, readdirSync, readFileSync, readlinkSync, statSync, unlinkSync } from 'node:fs';
import { createHash, randomBytes } from 'node:crypto';
import { basename, join } from 'node:path';
import { syncFolder, writeAll } from '../util/atomic-write.js';
import type { EntryFields } from '../core/entries.js';
import type { Ledger } from '../ledger/ledger.js';
import { readEntries } from '../ledger/ledger.js';
import type { OfferedReceipt, Store } from '../store/ports.js';

/** What one decision is about to commit. */
export interface DecisionNote {
  /** The request it takes. */
  id: string;
  /** The ledger's last seq before it: its entry, if it committed, comes after. */
  head: number;
  /** The operator entry it appends. */
  entry: EntryFields & { kind: 'operator'; action: 'approve' | 'deny'; request_entry: number };
  /** The receipt it offers (approve). */
  offer?: OfferedReceipt;
}

/** A process's state and when it started (clock ticks since boot), from /proc; null where unreadable. */
function procStat(pid: number): { state: string; started: string } | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' '); // fields 3 on
    return { state: f[0], started: f[19] }; // fields 3 and 22
  } catch {
    return null;
  }
}

/**
 * Where a pid means this process: the boot and the pid namespace (a home shared by containers, or
 * by hosts over a network file system, sees notes whose pids name other processes here).
 */
export function pidSpace(): string {
  const read = (f: () => string) => {
    try {
      return f();
    } catch {
      return '';
    }
  };
  const boot = read(() => readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim());
  const ns = read(() => readlinkSync('/proc/self/ns/pid'));
  return createHash('sha256').update(`${boot}\n${ns}`).digest('hex').slice(0, 12);
}

/** This process as a note's name gives its writer: its pid space, its pid, and when it started (a pid is reused; 0 without /proc). */
const SPACE = pidSpace();
const SELF = `${SPACE}-${process.pid}-${procStat(process.pid)?.started ?? 0}`;
const NOTE_NAME = /^([0-9a-f]{12})-(\d+)-(\d+)-[0-9a-f]+\.json$/;

/**
 * A note from another pid space is taken as its writer's decision in progress this long after it
 * was written; a decision takes milliseconds. Its pid names no process here, and an inbox may
 * never run there again (a container replaced): past this, it is completed here.
 */
const FOREIGN_NOTE_MS = 30_000;

/**
 * Whether the process that wrote the note `file` (named `name`) may still run: its own pid space
 * asks the process; another's, the note's age; a name without its writer (written before notes
 * named one) does not.
 */
function writerRuns(file: string, name: string): boolean {
  const m = NOTE_NAME.exec(name);
  if (!m) return false;
  const [, space, pidText, started] = m;
  if (space !== SPACE) {
    try {
      return Date.now() - statSync(file).mtimeMs < FOREIGN_NOTE_MS;
    } catch {
      return false; // gone: another inbox completed it
    }
  }
  const pid = Number(pidText);
  // Killed but not yet reaped (a zombie) is gone too: its locks and its decision are over.
  const p = started === '0' ? null : procStat(pid);
  if (p !== null) return p.started === started && p.state !== 'Z' && p.state !== 'X';
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code !== 'ESRCH';
  }
}

export class DecisionJournal {
  /** This process's notes whose decision is still running: never completed beside it. */
  private readonly deciding = new Set<string>();
  /** A completion runs: another (the next read of the store) waits for the next turn. */
  private recovering = false;

  constructor(private readonly dir: string) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  }

  /** Durable before the decision's transaction begins: its name, to drop once that committed. */
  write(note: DecisionNote): string {
    const file = join(this.dir, `${SELF}-${randomBytes(12).toString('hex')}.json`);
    this.deciding.add(file);
    const fd = openSync(file, 'wx', 0o600);
    try {
      writeAll(fd, JSON.stringify(note));
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    syncFolder(this.dir);
    return file;
  }

  /** The decision committed: its note goes. */
  drop(file: string): void {
    this.deciding.delete(file);
    gone(file);
  }

  /**
   * Completes the note of this process's decision whose commit failed (`only`), else every note
   * whose decision is over: this process's not deciding, and those whose writer no longer runs.
   */
  async recover(store: Store, ledger: Ledger, only?: string): Promise<number> {
    if (only !== undefined) {
      try {
        return await this.completeAll(store, ledger, [only]);
      } finally {
        this.deciding.delete(only); // completed, or left to the next read of the store
      }
    }
    if (this.recovering) return 0;
    this.recovering = true;
    try {
      return await this.completeAll(store, ledger, this.over());
    } finally {
      this.recovering = false;
    }
  }

  /**
   * Inside a decision's transaction on request `id`: every other note on that request is completed
   * first, or this decision would take a request that a dead writer's ledger half already decided.
   * Whether its writer runs is not asked here: the store's write locks are held, so no living
   * process is between its two commits, and /proc is no witness at this instant (a process killed
   * there has its locks released before it reads as gone). A living writer's note has nothing
   * committed yet, or all of it: completing it changes nothing. The notes completed, to drop once
   * this transaction committed (those whose writer is gone; a living writer drops its own).
   */
  completeFor(store: Store, ledger: Ledger, id: string, own: string | undefined): string[] {
    const done: string[] = [];
    for (const file of this.notes()) {
      if (file === own) continue;
      const note = readNote(file);
      if (note === null || note.id !== id) continue; // a torn one: the next recover() drops it
      complete(store, ledger, note);
      done.push(file);
    }
    return done;
  }

  /** Every note in the folder. */
  private notes(): string[] {
    return readdirSync(this.dir)
      .filter((n) => n.endsWith('.json'))
      .map((n) => join(this.dir, n));
  }

  /** Whether the decision of note `file` is over: this process's not deciding, or its writer no longer runs. */
  private isOver(file: string): boolean {
    const n = basename(file);
    return !this.deciding.has(file) && (n.startsWith(`${SELF}-`) || !writerRuns(file, n));
  }

  /** Notes whose decision is over. */
  private over(): string[] {
    return this.notes().filter((f) => this.isOver(f));
  }

  /** Notes completed by another decision's transaction, once it committed: those whose decision is over. */
  forget(files: string[]): void {
    for (const f of files) if (this.isOver(f)) gone(f);
  }

  private async completeAll(store: Store, ledger: Ledger, files: string[]): Promise<number> {
    let completed = 0;
    for (const file of files) {
      const note = readNote(file);
      // A note cut while it was written: its transaction never began (it begins once the note is
      // synced). One already gone: another inbox completed it (completing twice changes nothing).
      if (note !== null && (await store.transact(() => complete(store, ledger, note)))) completed++;
      gone(file);
    }
    return completed;
  }
}

function readNote(file: string): DecisionNote | null {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as DecisionNote;
  } catch (e) {
    if (e instanceof SyntaxError || (e as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw e;
  }
}

function gone(file: string): void {
  try {
    unlinkSync(file);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
  }
}

/** The half of a decision that did not commit, from the half that did; whether anything was. */
function complete(store: Store, ledger: Ledger, note: DecisionNote): boolean {
  const { entry, offer } = note;
  const recorded = [...readEntries(ledger.port, note.head + 1)].some(
    (e) => e.kind === 'operator' && e.action === entry.action && e.request_entry === entry.request_entry && (!offer || e.receipt === offer.receipt_id),
  );
  const at = new Date().toISOString();
  if (recorded) {
    // The entry committed: the request is decided, and an approval's receipt is where the gate takes it.
    if (store.approvalRequests.get(note.id) === null) return false;
    store.approvalRequests.take(note.id, at);
    if (offer) store.approvalRequests.offer(offer);
    return true;
  }
  // No entry. A receipt that reached the store (offered, or already used) is an approval the
  // ledger must show; anything else never happened and the request still waits.
  if (offer && (store.approvalRequests.offered(entry.fingerprint).some((o) => o.receipt_id === offer.receipt_id) || store.receipts.used(offer.receipt_id) !== null)) {
    ledger.appendInTx(entry);
    return true;
  }
  return false;
}
