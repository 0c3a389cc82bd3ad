// The PKCS#11 module runs inside the gate with the PIN and the key's sessions: a module file that
// another user owns, that others may write, or that sits in a folder anyone may write (not
// sticky) is refused, exit 2, named, before it is loaded. The real binary and SoftHSM's own
// module copied into folders of the test's; the copy as made (the user's own, 0644) opens.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, chownSync, copyFileSync, mkdirSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { cloakpipe, tempDir } from '../helpers/cli.js';
import { freshToken, hsmSkip, SOFTHSM_MODULE } from '../helpers/softhsm.js';

const asRoot = process.geteuid?.() === 0 ? {} : { skip: 'chown to another user needs root' };

test('a PKCS#11 module others could change is refused by init --key (exit 2, named); the user\'s own opens', { ...hsmSkip, ...asRoot }, () => {
  const t = freshToken();
  const env = { ...process.env, ...t.env, CLOAKPIPE_PKCS11_PIN: undefined };
  /** SoftHSM's module copied to `folder` (mode 0644), then `spoil`ed; the URI naming `named` (default the copy). */
  const copy = (folder: string, spoil: (module: string) => void = () => undefined, named?: (module: string) => string) => {
    mkdirSync(folder, { recursive: true });
    const module = join(folder, 'libsofthsm2.so');
    copyFileSync(SOFTHSM_MODULE, module);
    chmodSync(module, 0o644);
    spoil(module);
    const path = named ? named(module) : module;
    return cloakpipe(['init', '--home', join(tempDir(), 'home'), '--key', `pkcs11:token=${t.label};object=gate?module-path=${path}`, '--pin-file', t.pinFile], { env });
  };
  const cases: [string, () => ReturnType<typeof copy>, RegExp][] = [
    ['writable by others', () => copy(tempDir(), (m) => chmodSync(m, 0o666)), /libsofthsm2\.so is writable by others \(mode 0666\)/],
    ['writable by its group', () => copy(tempDir(), (m) => chmodSync(m, 0o664)), /libsofthsm2\.so is writable by others \(mode 0664\)/],
    ['owned by another user', () => copy(tempDir(), (m) => chownSync(m, 65534, 65534)), /libsofthsm2\.so is owned by another user \(uid 65534\)/],
    [
      'in a folder anyone may write',
      () => {
        const open = join(tempDir(), 'open');
        return copy(open, () => chmodSync(open, 0o777));
      },
      /is in a folder anyone may write/,
    ],
    [
      'named through a link in a folder anyone may write',
      () => {
        const open = join(tempDir(), 'open');
        mkdirSync(open);
        chmodSync(open, 0o777);
        return copy(tempDir(), undefined, (m) => {
          symlinkSync(m, join(open, 'module.so'));
          return join(open, 'module.so');
        });
      },
      /module\.so is in a folder anyone may write/,
    ],
  ];
  for (const [name, run, refusal] of cases) {
    const r = run();
    assert.equal(r.status, 2, `${name}: ${r.stderr}`);
    assert.match(r.stderr, refusal, name);
    assert.ok(!(r.stdout + r.stderr).includes(t.pin), name);
  }
  const own = copy(tempDir());
  assert.equal(own.status, 0, own.stderr);
});
