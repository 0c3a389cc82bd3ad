import { test } from 'node:test';
import assert from 'node:assert/strict';
import { preflightFailures, type HostFacts } from '../../src/confine/preflight.js';

const good: HostFacts = {
  platform: 'linux',
  socketIsLocalUnix: true,
  corePattern: 'core\n',
  info: { OperatingSystem: 'Debian GNU/Linux 12 (bookworm)', OSType: 'linux', KernelVersion: '6.1.0', Name: 'host' },
  kernel: '6.1.0',
};

test('a local Linux engine with a file core_pattern passes', () => {
  assert.deepEqual(preflightFailures(good), []);
});

test('preflight refusals', () => {
  assert.deepEqual(preflightFailures({ ...good, platform: 'darwin' }), ['not_linux']);
  assert.deepEqual(preflightFailures({ ...good, socketIsLocalUnix: false }), ['socket_not_local']);
  assert.deepEqual(preflightFailures({ ...good, corePattern: '|/usr/share/apport/apport %p' }), ['core_pattern_piped']);
  assert.deepEqual(preflightFailures({ ...good, corePattern: '  |/bin/handler' }), ['core_pattern_piped']);
  assert.deepEqual(preflightFailures({ ...good, corePattern: null }), ['core_pattern_unreadable']);
  assert.deepEqual(preflightFailures({ ...good, info: null }), ['engine_unreachable']);
  assert.deepEqual(preflightFailures({ ...good, info: { OperatingSystem: 'Docker Desktop', OSType: 'linux', KernelVersion: '6.6.12-linuxkit' } }), ['vm_engine', 'other_kernel']);
  assert.deepEqual(preflightFailures({ ...good, info: { OperatingSystem: 'Ubuntu', OSType: 'linux', KernelVersion: '5.15.0-linuxkit' } }), ['vm_engine', 'other_kernel']);
  assert.deepEqual(preflightFailures({ ...good, info: { OperatingSystem: 'Windows', OSType: 'windows' } }), ['vm_engine', 'other_kernel']);
  // A VM under a name the list does not know: its kernel is not this host's.
  assert.deepEqual(preflightFailures({ ...good, info: { ...good.info, KernelVersion: '5.15.0-1051-azure' } }), ['other_kernel']);
});
