// --public-url: which URLs may name the HTTP door's endpoint, and which --listen hosts name none.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { UsageError } from '../../src/cli/args.js';
import { isWildcard, parsePublicUrl } from '../../src/cli/public-url.js';

test('a public URL is https (http on loopback), without credentials, query or fragment, and names the endpoint with its path', () => {
  assert.equal(parsePublicUrl('https://mcp.example.com/mcp', '/mcp').href, 'https://mcp.example.com/mcp');
  assert.equal(parsePublicUrl('https://gw.example.com:8443/team-a/mcp', '/mcp').href, 'https://gw.example.com:8443/team-a/mcp');
  assert.equal(parsePublicUrl('https://mcp.example.com/', '/').href, 'https://mcp.example.com/');
  for (const loopback of ['http://127.0.0.1:8931/mcp', 'http://localhost:8931/mcp', 'http://[::1]:8931/mcp']) assert.equal(parsePublicUrl(loopback, '/mcp').href, loopback);
  const refused: [string, RegExp][] = [
    ['mcp.example.com/mcp', /is not a URL/],
    ['', /is not a URL/],
    ['http://mcp.example.com/mcp', /must be https: \(http: only on a loopback host\)/],
    ['http://10.0.0.5:8931/mcp', /must be https:/],
    ['http://127.0.0.1.example/mcp', /must be https:/],
    ['ftp://mcp.example.com/mcp', /must be https:/],
    ['https://ops:s3cret-canary@mcp.example.com/mcp', /must not carry credentials/],
    ['https://mcp.example.com/mcp?tenant=a', /no query or fragment/],
    ['https://mcp.example.com/mcp#x', /no query or fragment/],
    ['https://mcp.example.com/mcp?', /no query or fragment/],
    ['https://gw.example.net', /with its path/],
    ['https://gw.example.net/', /with its path/],
  ];
  for (const [text, why] of refused) {
    assert.throws(
      () => parsePublicUrl(text, '/mcp'),
      (e: unknown) => e instanceof UsageError && why.test(e.message) && !e.message.includes('s3cret-canary') && (text === '' || !e.message.includes(text)),
      text,
    );
  }
});

test('wildcard listen hosts, however spelled, name no address; others do', () => {
  for (const h of ['0.0.0.0', '0', '0.0', '::', '0:0:0:0:0:0:0:0', '::0']) assert.ok(isWildcard(h), h);
  for (const h of ['127.0.0.1', '::1', 'localhost', '10.0.0.5', 'gate.internal', 'fe80::1']) assert.ok(!isWildcard(h), h);
});
