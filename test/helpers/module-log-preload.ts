// Loaded with `node --import` in front of the real gate binary: registers module-log-hooks.ts,
// which appends the URL of every module the process loads to $CLOAKPIPE_TEST_MODULES, so a test
// can tell what a command loads without changing the command.
import { register } from 'node:module';

register('./module-log-hooks.js', import.meta.url);
