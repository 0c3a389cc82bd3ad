// Loaded with `node --import` in front of the real gate binary: what a reply does to its session
// (GateSession.replyEffect, the hook the gate runs when a call settles) throws when the reply
// holds $CLOAKPIPE_TEST_SETTLE_FAULT, as a fault in that step would (no reply does it today; the
// gate must not count on that). The module is the gate's own (same URL), so the gate sees it.
import { GateSession } from '../../src/gate/session.js';

const marker = process.env.CLOAKPIPE_TEST_SETTLE_FAULT;
if (!marker) throw new Error('CLOAKPIPE_TEST_SETTLE_FAULT must name the text that makes settling fail');
const replyEffect = GateSession.prototype.replyEffect;
GateSession.prototype.replyEffect = function (this: GateSession, ...a: Parameters<GateSession['replyEffect']>) {
  const effect = replyEffect.apply(this, a);
  return (reply) => {
    if (JSON.stringify(reply).includes(marker)) throw new RangeError('settle fault');
    return effect(reply);
  };
};
