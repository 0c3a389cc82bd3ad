// Loaded with `node --import` in front of the real gate binary: the process's clock runs
// $CLOAKPIPE_TEST_CLOCK_SKEW_MS ahead (negative: behind), as a host whose clock is off. Only
// Date.now (the gate's clock) moves; timers do not.
const skew = Number(process.env.CLOAKPIPE_TEST_CLOCK_SKEW_MS ?? 0);
if (!Number.isFinite(skew)) throw new Error('CLOAKPIPE_TEST_CLOCK_SKEW_MS must be a number of ms');
const real = Date.now.bind(Date);
Date.now = () => real() + skew;
