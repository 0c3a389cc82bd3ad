// The raw-line table of product.md section 1: each wire refusal from a realistic line, through
// the same decodeLine the gate uses, and the accept side next to it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decodeLine, encodeMessage, readableId } from '../../src/wire/message.js';
import { jsonRpcCode, type WireRefusal } from '../../src/core/refusal.js';
import { assertRefuses } from './helpers.js';

const call = (args: string): string =>
  `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"send_email","arguments":${args}}}`;
const nest = (n: number): string => '['.repeat(n) + ']'.repeat(n);

const REFUSED: Array<[string, WireRefusal, Buffer]> = [
  ['lone high surrogate escape', 'malformed_json', Buffer.from(call('{"to":"\\ud800"}'))],
  ['lone high surrogate followed by a non-surrogate escape', 'malformed_json', Buffer.from(call('{"to":"\\ud800\\u0041"}'))],
  ['lone low surrogate escape', 'malformed_json', Buffer.from(call('{"to":"\\udc00x"}'))],
  ['reversed surrogate pair', 'malformed_json', Buffer.from(call('{"to":"\\ude00\\ud83d"}'))],
  ['invalid UTF-8 byte', 'malformed_json', Buffer.concat([Buffer.from(call('{"to":"a')), Buffer.from([0xff]), Buffer.from('"}}}')])],
  ['overlong UTF-8 for "/"', 'malformed_json', Buffer.concat([Buffer.from(call('{"to":"a')), Buffer.from([0xc0, 0xaf]), Buffer.from('"}}}')])],
  ['UTF-8-encoded surrogate (CESU)', 'malformed_json', Buffer.concat([Buffer.from(call('{"to":"')), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from('"}}}')])],
  ['truncated UTF-8 sequence', 'malformed_json', Buffer.concat([Buffer.from(call('{"to":"')), Buffer.from([0xe2, 0x82]), Buffer.from('"}}}')])],
  ['leading byte-order mark', 'malformed_json', Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(call('{}'))])],
  ['trailing data after the message', 'malformed_json', Buffer.from(call('{}') + ' {"jsonrpc":"2.0"}')],
  ['two messages on one line', 'malformed_json', Buffer.from(call('{}') + call('{}'))],
  ['trailing comma', 'malformed_json', Buffer.from('{"jsonrpc":"2.0","id":1,"method":"ping",}')],
  ['single-quoted string', 'malformed_json', Buffer.from("{'jsonrpc':'2.0','id':1,'method':'ping'}")],
  ['comment', 'malformed_json', Buffer.from('{"jsonrpc":"2.0","id":1,"method":"ping"} // hi')],
  ['NaN literal', 'malformed_json', Buffer.from(call('{"n":NaN}'))],
  ['Infinity literal', 'malformed_json', Buffer.from(call('{"n":Infinity}'))],
  ['leading zero', 'malformed_json', Buffer.from(call('{"n":007}'))],
  ['hex number', 'malformed_json', Buffer.from(call('{"n":0x10}'))],
  ['raw tab inside a string', 'malformed_json', Buffer.from(call('{"body":"a\tb"}'))],
  ['raw NUL inside a string', 'malformed_json', Buffer.from(call('{"body":"a\u0000b"}'))],
  ['invalid escape', 'malformed_json', Buffer.from(call('{"body":"\\x41"}'))],
  ['truncated line', 'malformed_json', Buffer.from(call('{"to":"a@b.c"}').slice(0, -3))],
  ['nesting depth 65', 'malformed_json', Buffer.from(call(`{"x":${nest(62)}}`))],
  ['1,000,000 open brackets', 'malformed_json', Buffer.from('['.repeat(1_000_000))],
  ['canonically equivalent spellings of a key (NFC / NFD)', 'duplicate_key', Buffer.from(call('{"\u00e9":1,"e\u0301":2}'))],
  ['key differing only by an invisible code point', 'duplicate_key', Buffer.from(call('{"to":1,"t\u200bo":2}'))],
  ['whitespace only', 'malformed_json', Buffer.from('   ')],
  ['exact duplicate key in arguments', 'duplicate_key', Buffer.from(call('{"to":"a@x.com","to":"evil@y.com"}'))],
  ['case-folded duplicate key', 'duplicate_key', Buffer.from(call('{"to":"a@x.com","To":"evil@y.com"}'))],
  ['duplicate top-level id', 'duplicate_key', Buffer.from('{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}')],
  ['case-folded duplicate top-level method', 'duplicate_key', Buffer.from('{"jsonrpc":"2.0","id":1,"method":"ping","METHOD":"tools/call"}')],
  ['sharp s against SS', 'duplicate_key', Buffer.from(call('{"straße":1,"STRASSE":2}'))],
  ['Kelvin sign against k', 'duplicate_key', Buffer.from(call('{"k":1,"\u212a":2}'))],
  ['fullwidth against ASCII', 'duplicate_key', Buffer.from(call('{"to":1,"\uff34\uff4f":2}'))],
  ['escaped spelling of the same key', 'duplicate_key', Buffer.from(call('{"to":1,"\\u0074o":2}'))],
  ['1e400', 'number_out_of_range', Buffer.from(call('{"n":1e400}'))],
  ['-1e400', 'number_out_of_range', Buffer.from(call('{"n":-1e400}'))],
  ['1.0000000000000000001', 'number_out_of_range', Buffer.from(call('{"n":1.0000000000000000001}'))],
  ['2^53', 'number_out_of_range', Buffer.from(call('{"n":9007199254740992}'))],
  ['-(2^53)', 'number_out_of_range', Buffer.from(call('{"n":-9007199254740992}'))],
  ['2^53+1', 'number_out_of_range', Buffer.from(call('{"n":9007199254740993}'))],
  ['an id beyond 2^53', 'number_out_of_range', Buffer.from('{"jsonrpc":"2.0","id":12345678901234567890,"method":"ping"}')],
  ['underflow to zero', 'number_out_of_range', Buffer.from(call('{"n":1e-400}'))],
  ['17 significant digits for 0.1', 'number_out_of_range', Buffer.from(call('{"n":0.10000000000000001}'))],
  ['batch', 'batch_not_allowed', Buffer.from('[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"ping"}]')],
  ['empty batch', 'batch_not_allowed', Buffer.from('[]')],
  ['missing jsonrpc', 'invalid_request', Buffer.from('{"id":1,"method":"ping"}')],
  ['jsonrpc 1.0', 'invalid_request', Buffer.from('{"jsonrpc":"1.0","id":1,"method":"ping"}')],
  ['jsonrpc as a number', 'invalid_request', Buffer.from('{"jsonrpc":2.0,"id":1,"method":"ping"}')],
  ['a bare string', 'invalid_request', Buffer.from('"tools/call"')],
  ['null', 'invalid_request', Buffer.from('null')],
  ['method not a string', 'invalid_request', Buffer.from('{"jsonrpc":"2.0","id":1,"method":42}')],
  ['empty method', 'invalid_request', Buffer.from('{"jsonrpc":"2.0","id":1,"method":""}')],
  ['params a string', 'invalid_request', Buffer.from('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":"x"}')],
  ['params null', 'invalid_request', Buffer.from('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":null}')],
  ['fractional id', 'invalid_request', Buffer.from('{"jsonrpc":"2.0","id":1.5,"method":"ping"}')],
  ['object id', 'invalid_request', Buffer.from('{"jsonrpc":"2.0","id":{},"method":"ping"}')],
  ['boolean id', 'invalid_request', Buffer.from('{"jsonrpc":"2.0","id":true,"method":"ping"}')],
  ['null id on a request', 'invalid_request', Buffer.from('{"jsonrpc":"2.0","id":null,"method":"ping"}')],
  ['unknown top-level member', 'invalid_request', Buffer.from('{"jsonrpc":"2.0","id":1,"method":"ping","extra":1}')],
  ['request carrying a result', 'invalid_request', Buffer.from('{"jsonrpc":"2.0","id":1,"method":"ping","result":{}}')],
  ['response with both result and error', 'invalid_request', Buffer.from('{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"m"}}')],
  ['response with neither', 'invalid_request', Buffer.from('{"jsonrpc":"2.0","id":1}')],
  ['response without id', 'invalid_request', Buffer.from('{"jsonrpc":"2.0","result":{}}')],
  ['success response with null id', 'invalid_request', Buffer.from('{"jsonrpc":"2.0","id":null,"result":{}}')],
  ['error without a code', 'invalid_request', Buffer.from('{"jsonrpc":"2.0","id":1,"error":{"message":"m"}}')],
  ['frame over the maximum', 'frame_too_large', Buffer.from(call(`{"body":"${'a'.repeat(5 * 1024 * 1024)}"}`))],
];

for (const [label, code, line] of REFUSED) {
  test(`refuses ${code}: ${label}`, () => {
    assertRefuses(() => decodeLine(line), code, label);
    // Wire refusals carry the JSON-RPC codes of section 1.
    assert.equal(jsonRpcCode(code), code === 'batch_not_allowed' || code === 'invalid_request' ? -32600 : -32700);
  });
}

test('nesting depth 64 is accepted, 65 is not (arrays and objects together)', () => {
  // params {...} is depth 1 at the top object; count every bracket and brace.
  const at = (depth: number): string => {
    // top object (1) + params object (2) + arrays
    const inner = '['.repeat(depth - 2) + ']'.repeat(depth - 2);
    return `{"jsonrpc":"2.0","id":1,"method":"m","params":{"x":${inner}}}`;
  };
  assert.equal(decodeLine(Buffer.from(at(64))).kind, 'request');
  assertRefuses(() => decodeLine(Buffer.from(at(65))), 'malformed_json');
  const mixed = (n: number): string => '{"a":['.repeat(n / 2) + ']}'.repeat(n / 2);
  assert.doesNotThrow(() => decodeLine(Buffer.from(`{"jsonrpc":"2.0","id":1,"method":"m","params":${mixed(62)}}`)));
  assertRefuses(() => decodeLine(Buffer.from(`{"jsonrpc":"2.0","id":1,"method":"m","params":${mixed(64)}}`)), 'malformed_json');
});

const ACCEPTED: Array<[string, string, string]> = [
  ['request', '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"to":"a@b.c"}}}', 'request'],
  ['request with a string id', '{"jsonrpc":"2.0","id":"abc-1","method":"tools/list"}', 'request'],
  ['request with id 0 and array params', '{"jsonrpc":"2.0","id":0,"method":"m","params":[1,2]}', 'request'],
  ['negative integer id', '{"jsonrpc":"2.0","id":-5,"method":"m"}', 'request'],
  ['notification', '{"jsonrpc":"2.0","method":"notifications/initialized"}', 'notification'],
  ['progress notification', '{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":0.5,"total":1}}', 'notification'],
  ['response to a server request', '{"jsonrpc":"2.0","id":3,"result":{"roots":[]}}', 'response'],
  ['response with a null result', '{"jsonrpc":"2.0","id":3,"result":null}', 'response'],
  ['error response with null id', '{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}', 'response'],
  ['error with data', '{"jsonrpc":"2.0","id":"x","error":{"code":-32001,"message":"no","data":{"a":[1]}}}', 'response'],
  ['whitespace, escapes and unicode', ' { "jsonrpc" : "2.0" , "id" : 1 , "method" : "m" , "params" : { "s" : "\\u00e9\\ud83d\\ude00\\/\\n", "é": "😀", "e\u0301x": 1 } } ', 'request'],
  ['numbers that round-trip', '{"jsonrpc":"2.0","id":1,"method":"m","params":[1.0,0.1,1e2,-0,9007199254740991,-9007199254740991,1.5e-7,5e-324,0.30000000000000004,100e-2,0e999999999999999999]}', 'request'],
  ['distinct keys that only look alike', '{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":1,"b":2,"a_":3,"A1":4,"to":5,"tó":6}}', 'request'],
  ['__proto__ and constructor as keys', '{"jsonrpc":"2.0","id":1,"method":"m","params":{"__proto__":{"polluted":true},"constructor":{"prototype":{"x":1}}}}', 'request'],
];

for (const [label, text, kind] of ACCEPTED) {
  test(`accepts ${kind}: ${label}`, () => {
    const m = decodeLine(Buffer.from(text));
    assert.equal(m.kind, kind);
    assert.deepEqual(m.msg, JSON.parse(text));
  });
}

test('CRLF-free raw line with a DEL character and non-characters is accepted', () => {
  const text = '{"jsonrpc":"2.0","id":1,"method":"m","params":{"s":"\u007f\uffff\ufffe"}}';
  assert.deepEqual(decodeLine(Buffer.from(text)).msg, JSON.parse(text));
});

test('classification carries id, method and params', () => {
  const m = decodeLine(Buffer.from('{"jsonrpc":"2.0","id":"r1","method":"tools/call","params":{"name":"x"}}'));
  assert.ok(m.kind === 'request');
  assert.equal(m.id, 'r1');
  assert.equal(m.method, 'tools/call');
  assert.deepEqual(m.params, { name: 'x' });
  const n = decodeLine(Buffer.from('{"jsonrpc":"2.0","method":"notifications/cancelled"}'));
  assert.ok(n.kind === 'notification');
  assert.equal('params' in n, false);
  const r = decodeLine(Buffer.from('{"jsonrpc":"2.0","id":null,"error":{"code":1,"message":"m"}}'));
  assert.ok(r.kind === 'response');
  assert.equal(r.id, null);
});

test('__proto__ becomes an own data property and pollutes nothing', () => {
  const m = decodeLine(Buffer.from('{"jsonrpc":"2.0","id":1,"method":"m","params":{"__proto__":{"polluted":true,"isAdmin":true}}}'));
  const params = (m as { params: Record<string, unknown> }).params;
  assert.equal(Object.getPrototypeOf(params), Object.prototype);
  assert.ok(Object.prototype.hasOwnProperty.call(params, '__proto__'));
  assert.deepEqual(Object.keys(params), ['__proto__']);
  assert.equal((params as { polluted?: unknown }).polluted, undefined);
  assert.equal(({} as { polluted?: unknown }).polluted, undefined);
  assert.equal((Object.prototype as { isAdmin?: unknown }).isAdmin, undefined);
  // It survives re-serialization as a key, as the upstream must see it.
  assert.match(encodeMessage(m.msg), /"__proto__":\{"isAdmin":true,"polluted":true\}/);
});

test('readableId: the id only when the line parses strictly as an object with a valid id', () => {
  const id = (s: string | Buffer): unknown => readableId(typeof s === 'string' ? Buffer.from(s) : s);
  assert.equal(id('{"jsonrpc":"2.0","id":42,"method":"m","extra":1}'), 42); // invalid_request, id readable
  assert.equal(id('{"jsonrpc":"1.0","id":"a","method":"m"}'), 'a');
  assert.equal(id('{"jsonrpc":"2.0","id":42,"method":"m","params":{"to":1,"To":2}}'), null); // duplicate
  assert.equal(id('{"jsonrpc":"2.0","id":1,"id":2,"method":"m"}'), null);
  assert.equal(id('{"jsonrpc":"2.0","id":42,"method":"m"'), null); // truncated
  assert.equal(id('{"jsonrpc":"2.0","id":1.5,"method":"m"}'), null);
  assert.equal(id('{"jsonrpc":"2.0","id":null,"method":"m"}'), null);
  assert.equal(id('{"jsonrpc":"2.0","id":{"a":1},"method":"m"}'), null);
  assert.equal(id('[{"jsonrpc":"2.0","id":1,"method":"m"}]'), null);
  assert.equal(id(Buffer.from([0x7b, 0x22, 0xff])), null);
  assert.equal(id('['.repeat(1_000_000)), null);
});

test('encodeMessage forwards the RFC 8785 form, never the raw spelling', () => {
  const raw = ' {"params":{"b":1.0,"a":"\\u0041\\/"},"method":"m","id":1,"jsonrpc":"2.0"} ';
  const m = decodeLine(Buffer.from(raw));
  assert.equal(encodeMessage(m.msg), '{"id":1,"jsonrpc":"2.0","method":"m","params":{"a":"A/","b":1}}\n');
  // -0 is forwarded as 0; large exponents in shortest form.
  const n = decodeLine(Buffer.from('{"jsonrpc":"2.0","id":1,"method":"m","params":[-0,1e-7,100e-2]}'));
  assert.equal(encodeMessage(n.msg), '{"id":1,"jsonrpc":"2.0","method":"m","params":[0,1e-7,1]}\n');
  // The forwarded line is itself accepted by the strict decoder, with the same value.
  assert.deepEqual(decodeLine(Buffer.from(encodeMessage(m.msg).trimEnd())).msg, m.msg);
});
