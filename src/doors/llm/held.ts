// Proposed calls held until decided, released to the agent in the order the model proposed
// them. Guards against a call reaching the agent before the gate allowed it, and against a
// refused call leaving a gap the agent's SDK cannot read: released calls are numbered again,
// densely, in the order they go out.
import { isJsonObject, type JsonObject } from '../../core/json.js';
import type { RefusalData } from '../../core/outcome.js';
import { parseStrict, WireError } from '../../wire/strict-parse.js';
import type { LlmSession, Verdict } from './session.js';

/** One call as a stream (or a body) proposed it; a format keeps its own held material in `held`. */
export interface Slot<H> {
  /** The model's position for it (a tool call index, a content block index). */
  index: number;
  id: string;
  tool: string;
  /** Its arguments as text (streamed fragments joined), or the object a body carried. */
  args: string | JsonObject;
  held: H;
  verdict?: Verdict;
}

/** What a refusal looks like to the agent: one line, the tool, the code, the detail. */
export function refusalText(tool: string, r: RefusalData): string {
  return `cloakpipe refused ${tool}: ${r.reason}: ${r.detail}`;
}

/** Decide one slot: its arguments read strictly (an object, or refused as unreadable), then the gate. */
export async function decideSlot(session: LlmSession, slot: Slot<unknown>, receipts: JsonObject[]): Promise<Verdict> {
  let args: JsonObject;
  if (typeof slot.args === 'string') {
    try {
      const v = parseStrict(slot.args);
      if (!isJsonObject(v)) throw new WireError('invalid_request', 'tool call arguments must be a JSON object');
      args = v;
    } catch (e) {
      const code = e instanceof WireError ? e.code : 'malformed_json';
      const detail = e instanceof WireError ? `tool call arguments: ${e.detail}` : 'tool call arguments could not be read';
      return { release: false, refusal: await session.refuseWhole(code, detail, new TextEncoder().encode(slot.args)) };
    }
  } else args = slot.args;
  return session.decide({ id: slot.id, tool: slot.tool, arguments: args }, receipts);
}

/** The calls of one choice (OpenAI) or one message (Anthropic), in proposal order. */
export class HeldCalls<H> {
  readonly slots: Slot<H>[] = [];
  private readonly decisions: Promise<void>[] = [];
  private next = 0;
  /** Calls released so far: the next released call's position. */
  released = 0;
  readonly refused: { tool: string; refusal: RefusalData }[] = [];

  constructor(
    private readonly decideFn: (slot: Slot<H>) => Promise<Verdict>,
    /** Called once per slot, in order, as soon as it and every slot before it are decided. */
    private readonly out: (slot: Slot<H>, position: number | null) => void,
  ) {}

  /** The slot's arguments are complete: decide it now (decisions run side by side). */
  complete(slot: Slot<H>): void {
    this.decisions.push(
      this.decideFn(slot).then((v) => {
        slot.verdict = v;
        if (this.later.delete(slot) && v.release) v.withdraw(); // decided after the response closed
        this.flush();
      }),
    );
  }

  /** Slots still being decided when the response closed. */
  private readonly later = new Set<Slot<H>>();

  /** Every slot completed so far decided and handed to `out`. */
  async settled(): Promise<void> {
    while (this.decisions.length > 0) await Promise.all(this.decisions.splice(0));
    this.flush();
  }

  /**
   * The response is over (done, failed, or the agent gone): a call allowed but not handed to
   * `out` yet never reaches the agent, now or later, and is withdrawn (`not_forwarded`).
   */
  close(): void {
    this.closed = true;
    this.flush();
  }

  private closed = false;

  /** A body that will not reach the agent after all (--on-refusal error): every allowed call is withdrawn. */
  withdrawAll(): void {
    for (const s of this.slots) if (s.verdict?.release) s.verdict.withdraw();
  }

  private flush(): void {
    while (this.next < this.slots.length) {
      const slot = this.slots[this.next];
      const v = slot.verdict;
      if (!v) {
        if (!this.closed) return;
        this.next++;
        this.later.add(slot);
        continue;
      }
      this.next++;
      if (v.release && this.closed) v.withdraw();
      else if (v.release) this.out(slot, this.released++);
      else {
        this.refused.push({ tool: slot.tool, refusal: v.refusal });
        this.out(slot, null);
      }
    }
  }
}
