// mcp-proxy's own way back to stdio: its library's startStdioServer, connected to an
// mcp-proxy CLI serving the upstream over Streamable HTTP. Together they are what a stdio host
// would put in the path to use mcp-proxy. Usage: node dist/bench/mcp-proxy-stdio.js URL
import { ServerType, startStdioServer } from 'mcp-proxy';

const url = process.argv[2];
if (!url) {
  process.stderr.write('usage: mcp-proxy-stdio.js URL\n');
  process.exit(2);
}
await startStdioServer({ serverType: ServerType.HTTPStream, url });
process.stdin.on('end', () => process.exit(0));
