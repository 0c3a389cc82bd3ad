// Label facts for the ledger (product.md sections 6 and 7): each rise of the session label is
// an entry naming the labels, the cause and the digest of what caused it, never its content.
// The gate calls these inside its transactions; the in-memory rise happens first, so a failed
// commit leaves the session higher (safe), never lower.
import type { ToolDecl } from '../contract/manifest-types.js';
import type { LabelFields } from '../core/entries.js';
import type { UpstreamReply } from '../core/outcome.js';
import type { JsonValue } from '../core/json.js';
import type { FlowSession, LabelRaise } from './session.js';

export function labelEntry(raise: LabelRaise, tool: string | null): LabelFields {
  return {
    kind: 'label',
    from: raise.from,
    to: raise.to,
    cause: raise.cause,
    ...(tool !== null ? { tool } : {}),
    digest: raise.digest,
  };
}

/**
 * After the upstream answered a forwarded call (or a stored result is replayed), before the
 * host sees it: raise the session label. An error the tool sent counts as its output too.
 * Returns the label entry to append, or null when the label did not rise.
 */
export function flowAfterReply(session: FlowSession, toolName: string, tool: ToolDecl | undefined, reply: UpstreamReply): LabelFields | null {
  const output = outputOf(reply);
  if (output === undefined) return null;
  return labelled(session, output, toolName, () => session.observe(toolName, tool, output));
}

/** A reply that could not be worked out after the host may have seen it: the session's highest label. */
export function flowUnreadReply(session: FlowSession, toolName: string, reply: UpstreamReply): LabelFields | null {
  const raise = session.failClosed(outputOf(reply) ?? null);
  return raise ? labelEntry(raise, toolName) : null;
}

/** What the host is shown of a reply: its result, else the error the tool sent. */
const outputOf = (reply: UpstreamReply): JsonValue | undefined => (reply.result !== undefined ? reply.result : reply.error);

/**
 * A server line on its way to the host that is not the reply to a gated call: the parsed
 * message, or the line's text when it does not parse. Call before the line is written.
 */
export function flowServerOutput(session: FlowSession, output: JsonValue): LabelFields | null {
  return labelled(session, output, null, () => session.observeUnattributed(output));
}

/** Output whose content the gate cannot read (given by reference): the worst a classify rule could find. */
export function flowUnreadOutput(session: FlowSession, output: JsonValue): LabelFields | null {
  return labelled(session, output, null, () => session.observeUnread(output));
}

/** The rise `observe` computes; an error while computing it raises the session to its highest
 *  label (the host sees the output whatever happens here: fail closed is the label, ADR 102). */
function labelled(session: FlowSession, output: JsonValue, tool: string | null, observe: () => LabelRaise | null): LabelFields | null {
  let raise: LabelRaise | null;
  try {
    raise = observe();
  } catch {
    raise = session.failClosed(output);
  }
  return raise ? labelEntry(raise, tool) : null;
}
