// What this gate's session has seen of the server's tool definitions, and what it makes of a
// `tools/list` answer: pin a declared tool seen for the first time, record a change. A change
// holds until an operator accepts it (or the manifest's pin moves to it): a server that shows
// the pinned definition again after a change can flip back at will, and the host may still hold
// the changed one, so showing it again lifts nothing.
import { digestJson } from '../core/digest.js';
import { isJsonObject, type JsonValue } from '../core/json.js';
import type { EntryFields } from '../ledger/entry.js';
import type { PinsPort } from '../store/ports.js';
import type { Manifest } from '../contract/manifest-types.js';

export class PinSession {
  /** tool → digest of the definition the server gave most recently in this session. */
  private readonly current = new Map<string, string>();
  /** tool → the release and pin a changed definition was recorded against in this session (a
   *  later listing may not clear it, whatever the store row says now). */
  private readonly changedAgainst = new Map<string, string>();

  constructor(
    readonly store: PinsPort,
    /** The manifest in force (it may be reloaded while the session runs). */
    private readonly manifest: () => Manifest,
  ) {}

  get release(): string {
    return this.manifest().release;
  }

  private declared(tool: string): boolean {
    return Object.prototype.hasOwnProperty.call(this.manifest().tools, tool);
  }

  /** The manifest's own pins: authoritative, never rewritten by what the server says. */
  private get manifestPins(): Record<string, string> {
    return this.manifest().pins ?? {};
  }

  /** The definitions of the listing in progress: a page after one with a nextCursor continues it
   *  (the host holds every page's tools at once). */
  private readonly listing = new Map<string, string>();
  private continues = false;

  /** A listing shown to the host could not be read (an error in seeList): which definition
   *  changed is unknown, so every call of this session to a declared tool is refused. */
  private unreadListing = false;

  /** The host was shown a listing this session failed to read (the gate's catch: fail closed). */
  listingUnread(): void {
    this.unreadListing = true;
  }

  get unread(): boolean {
    return this.unreadListing;
  }

  /** Digests of the declared tools in a tools/list result; held in memory at once. */
  seeList(result: JsonValue): Map<string, string> {
    const seen = new Map<string, string>();
    if (!isJsonObject(result) || !Array.isArray(result.tools)) return seen;
    if (!this.continues) this.listing.clear();
    this.continues = typeof result.nextCursor === 'string';
    for (const t of result.tools) {
      if (!isJsonObject(t) || typeof t.name !== 'string' || !this.declared(t.name)) continue;
      // Listed again (on this page or an earlier one of the listing) with another definition:
      // the host may use either, so the tool changed. The digest of both equals no pin of one
      // definition (the same definition twice is no change).
      const prev = this.listing.get(t.name);
      const one = digestJson(t);
      const d = prev === undefined || prev === one ? one : digestJson([prev, one]);
      this.listing.set(t.name, d);
      seen.set(t.name, d);
      this.current.set(t.name, d);
    }
    return seen;
  }

  /** Persist what a list showed (inside a transaction: a fleet's store is read only there); returns the ledger facts. */
  recordList(seen: Map<string, string>, now: number): EntryFields[] {
    const facts: EntryFields[] = [];
    for (const [tool, digest] of seen) {
      const manifestPin = this.manifestPins[tool];
      const row = this.store.get(this.release, tool);
      if (!row) {
        this.store.insert(this.release, tool, manifestPin ?? digest, now);
        facts.push({ kind: 'pins', action: 'pinned', tool, digest: manifestPin ?? digest, source: manifestPin ? 'manifest' : 'tools/list' });
        if (manifestPin && manifestPin !== digest) {
          this.changedAgainst.set(tool, `${this.release} ${manifestPin}`);
          this.store.setObserved(this.release, tool, digest);
          facts.push({ kind: 'pins', action: 'changed', tool, pinned: manifestPin, observed: digest });
        }
        continue;
      }
      // The pinned definition shown again leaves a change awaiting review as it is.
      const pinned = manifestPin ?? row.digest;
      if (digest !== pinned) this.changedAgainst.set(tool, `${this.release} ${pinned}`);
      if (digest !== pinned && digest !== row.observed) {
        this.store.setObserved(this.release, tool, digest);
        facts.push({ kind: 'pins', action: 'changed', tool, pinned, observed: digest });
      }
    }
    return facts;
  }

  /**
   * The pinned digest of a tool; `changed` when the server listed another definition (in this
   * session, or as recorded by any gate on the store) since that pin was set.
   */
  status(tool: string): { pinned: string | null; changed: boolean } {
    const row = this.store.get(this.release, tool);
    const pinned = this.manifestPins[tool] ?? row?.digest ?? null;
    if (pinned === null) return { pinned, changed: false };
    const now = this.current.get(tool) ?? pinned;
    const awaiting = row?.observed != null && row.observed !== pinned;
    return { pinned, changed: now !== pinned || awaiting || this.changedAgainst.get(tool) === `${this.release} ${pinned}` };
  }
}
