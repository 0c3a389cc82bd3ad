// RFC 7512 URIs as the gate reads them: what they name, and what is refused by name (a PIN in
// the URI, attributes the gate would not act on, a relative module path).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parsePkcs11Uri, UriError } from '../../src/keys/uri.js';

const M = 'module-path=/usr/lib/softhsm/libsofthsm2.so';

test('token, object, id, serial and slot-id are read, percent-decoded', () => {
  const u = parsePkcs11Uri(`pkcs11:token=My%20Token;object=gate%3Bkey;id=%01%ff;serial=ab12;slot-id=7;type=private?${M}`);
  assert.equal(u.token, 'My Token');
  assert.equal(u.object, 'gate;key');
  assert.deepEqual(u.id, Buffer.from([1, 255]));
  assert.equal(u.serial, 'ab12');
  assert.equal(u.slotId, 7);
  assert.equal(u.modulePath, '/usr/lib/softhsm/libsofthsm2.so');
  assert.equal(parsePkcs11Uri(`PKCS11:token=t;object=o?module-path=%2Fopt%2Fhsm.so`).modulePath, '/opt/hsm.so');
});

test('refused, by name', () => {
  const cases: [string, RegExp][] = [
    [`pkcs11:token=t;object=o?${M}&pin-value=1234`, /pin-value is refused/],
    [`pkcs11:token=t;object=o;pin-value=1234?${M}`, /pin-value is refused/],
    [`pkcs11:token=t;object=o?${M}&pin-source=file:/p`, /pin-source is refused/],
    ['pkcs11:token=t;object=o', /module-path=.* is required/],
    ['pkcs11:token=t;object=o?module-path=lib.so', /absolute/],
    [`pkcs11:token=t;object=o;library-version=1?${M}`, /"library-version" is not supported/],
    [`pkcs11:token=t;object=o?${M}&module-name=softhsm2`, /"module-name" is not supported/],
    [`pkcs11:token=t;token=u;object=o?${M}`, /token is given twice/],
    [`pkcs11:object=o?${M}`, /name the token/],
    [`pkcs11:token=t?${M}`, /name the key/],
    [`pkcs11:token=t;object=o;type=public?${M}`, /type must be private/],
    [`pkcs11:token=t%zz;object=o?${M}`, /percent-encoding/],
    [`pkcs11:token=%ff;object=o?${M}`, /not UTF-8/],
    [`pkcs11:token=t;object=o;slot-id=-1?${M}`, /slot-id/],
    [`pkcs11:token=t;object=o;id=?${M}`, /id is empty/],
    [`pkcs11:token;object=o?${M}`, /no name=value/],
    ['/path/to/gate.key', /pkcs11: URI/],
  ];
  for (const [uri, msg] of cases) assert.throws(() => parsePkcs11Uri(uri), (e: unknown) => e instanceof UriError && msg.test(e.message), uri);
});

test('an error never repeats a PIN given in the URI', () => {
  try {
    parsePkcs11Uri(`pkcs11:token=t;object=o?${M}&pin-value=s3cret-pin`);
    assert.fail('accepted');
  } catch (e) {
    assert.ok(!(e as Error).message.includes('s3cret-pin'));
  }
});
