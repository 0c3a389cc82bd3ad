// Pinned tool definitions: a call to a tool whose definition changed since it was pinned is
// refused until an operator accepts the new definition (`cloakpipe pins accept`). Guards
// against a server that changes what a tool says it does after the release was reviewed.
import type { Facts } from '../facts.js';
import { PASS, refuse, type Verdict } from '../verdict.js';

export function checkPins(f: Facts): Verdict {
  const pins = f.session.pins;
  if (!pins) return PASS;
  if (pins.unread) return refuse('fail_closed', 'a tools/list answer the host was shown could not be checked against the pins: this session\'s tools are refused');
  const { pinned, changed } = pins.status(f.call.tool);
  if (pinned) f.notes.fields.pin = pinned;
  if (changed) return refuse('tool_definition_changed', 'the server changed this tool\'s definition since it was pinned: cloakpipe pins accept after review');
  return PASS;
}
