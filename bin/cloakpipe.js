#!/usr/bin/env node
// The installed entry point: the compiled CLI (npm run build; `npm pack` builds it).
try {
  await import('../dist/src/cli/main.js');
} catch (e) {
  if (e?.code === 'ERR_MODULE_NOT_FOUND' && String(e.message).includes('dist/src/cli/main.js')) {
    process.stderr.write('cloakpipe: not built: run `npm ci && npm run build` in the package folder\n');
    process.exit(2);
  }
  throw e;
}
