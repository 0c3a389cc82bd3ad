#!/usr/bin/env node
// The installed entry point: the compiled CLI (npm run build).
import '../dist/src/cli/main.js';
