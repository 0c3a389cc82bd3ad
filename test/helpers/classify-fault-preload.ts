// Loaded with `node --import` in front of the real gate binary: the classifier's engine (re2js)
// fails on any text holding $CLOAKPIPE_TEST_CLASSIFY_FAULT, as a fault inside a dependency
// would (no input the gate reads today makes it throw; the gate must not count on that).
import { RE2JS } from 're2js';

const marker = process.env.CLOAKPIPE_TEST_CLASSIFY_FAULT;
if (!marker) throw new Error('CLOAKPIPE_TEST_CLASSIFY_FAULT must name the text that makes classification fail');
const matcher = RE2JS.prototype.matcher;
RE2JS.prototype.matcher = function (this: RE2JS, input: Parameters<RE2JS['matcher']>[0]) {
  if (typeof input === 'string' && input.includes(marker)) throw new RangeError('classifier fault');
  return matcher.call(this, input);
};
