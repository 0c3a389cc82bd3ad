// Admission: the hardened inspect passes; each single weakened field is refused on its own.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { admissionViolations, stateViolations, type Violation } from '../../src/confine/admission.js';
import { hardenedProfile } from '../../src/confine/profile.js';

const IMG = 'sha256:' + 'ab'.repeat(32);

/** What `docker inspect` returns for the hardened profile (as observed on Docker 20.10). */
function goodInspect(): any {
  const p = hardenedProfile(IMG);
  return {
    Id: 'c'.repeat(64),
    Image: IMG,
    RestartCount: 0,
    State: { Status: 'running', Running: true, Paused: false, Restarting: false },
    Mounts: [],
    HostConfig: {
      ...structuredClone(p.HostConfig),
      Binds: null,
      Mounts: undefined,
      CapAdd: null,
      VolumesFrom: null,
      Tmpfs: undefined,
      DeviceCgroupRules: null,
      DeviceRequests: null,
      GroupAdd: null,
      MaskedPaths: ['/proc/asound', '/proc/acpi', '/proc/kcore', '/proc/keys', '/proc/latency_stats', '/proc/timer_list', '/proc/timer_stats', '/proc/sched_debug', '/proc/scsi', '/sys/firmware'],
      ReadonlyPaths: ['/proc/bus', '/proc/fs', '/proc/irq', '/proc/sys', '/proc/sysrq-trigger'],
    },
    Config: { User: '65534:65534', Tty: false, OpenStdin: true, StdinOnce: true, Image: IMG, Volumes: null, Entrypoint: ['/usr/bin/node', '/agent/agent.mjs'] },
    NetworkSettings: { Networks: { none: {} } },
  };
}

test('the hardened profile as inspected is admitted', () => {
  assert.deepEqual(admissionViolations(goodInspect(), IMG), []);
});

const weakenings: Array<[string, (i: any) => void, Violation]> = [
  ['network bridge', (i) => (i.HostConfig.NetworkMode = 'bridge'), 'network_mode'],
  ['network host', (i) => (i.HostConfig.NetworkMode = 'host'), 'network_mode'],
  ['attached to a network', (i) => (i.NetworkSettings.Networks = { none: {}, bridge: {} }), 'network_attached'],
  ['writable root', (i) => (i.HostConfig.ReadonlyRootfs = false), 'readonly_rootfs'],
  ['a bind', (i) => (i.HostConfig.Binds = ['/tmp:/x']), 'binds'],
  ['a HostConfig mount', (i) => (i.HostConfig.Mounts = [{ Type: 'bind', Source: '/tmp', Target: '/x' }]), 'mounts'],
  ['an effective mount', (i) => (i.Mounts = [{ Type: 'volume', Destination: '/export' }]), 'mounts'],
  ['an image VOLUME', (i) => (i.Config.Volumes = { '/export': {} }), 'volumes'],
  ['volumes-from', (i) => (i.HostConfig.VolumesFrom = ['other']), 'volumes_from'],
  ['a tmpfs', (i) => (i.HostConfig.Tmpfs = { '/tmp': '' }), 'tmpfs'],
  ['no CapDrop ALL', (i) => (i.HostConfig.CapDrop = ['NET_RAW']), 'cap_drop'],
  ['a CapAdd', (i) => (i.HostConfig.CapAdd = ['NET_ADMIN']), 'cap_add'],
  ['privileged', (i) => (i.HostConfig.Privileged = true), 'privileged'],
  ['no no-new-privileges', (i) => (i.HostConfig.SecurityOpt = []), 'no_new_privileges'],
  ['seccomp unconfined', (i) => i.HostConfig.SecurityOpt.push('seccomp=unconfined'), 'security_opt'],
  ['a seccomp profile allowing every call', (i) => i.HostConfig.SecurityOpt.push('seccomp={"defaultAction":"SCMP_ACT_ALLOW"}'), 'security_opt'],
  ['an SELinux type of its own', (i) => i.HostConfig.SecurityOpt.push('label=type:spc_t'), 'security_opt'],
  ['an AppArmor profile of its own', (i) => i.HostConfig.SecurityOpt.push('apparmor=permissive'), 'security_opt'],
  ['no-new-privileges taken back', (i) => i.HostConfig.SecurityOpt.push('no-new-privileges=false'), 'security_opt'],
  ['a masked path unmasked', (i) => (i.HostConfig.MaskedPaths = i.HostConfig.MaskedPaths.filter((p: string) => p !== '/proc/kcore')), 'masked_paths'],
  ['/proc/sys writable', (i) => (i.HostConfig.ReadonlyPaths = i.HostConfig.ReadonlyPaths.filter((p: string) => p !== '/proc/sys')), 'masked_paths'],
  ['no masked paths', (i) => (i.HostConfig.MaskedPaths = null), 'masked_paths'],
  ['the root group added', (i) => (i.HostConfig.GroupAdd = ['0']), 'group_add'],
  ['root user', (i) => (i.Config.User = '0:0'), 'user'],
  ['empty user (image default)', (i) => (i.Config.User = ''), 'user'],
  ['named user', (i) => (i.Config.User = 'nobody'), 'user'],
  ['uid without gid', (i) => (i.Config.User = '65534'), 'user'],
  ['json-file logs', (i) => (i.HostConfig.LogConfig = { Type: 'json-file', Config: {} }), 'log_driver'],
  ['restart always', (i) => (i.HostConfig.RestartPolicy = { Name: 'always', MaximumRetryCount: 0 }), 'restart_policy'],
  ['restart on-failure', (i) => (i.HostConfig.RestartPolicy = { Name: 'on-failure', MaximumRetryCount: 3 }), 'restart_policy'],
  ['no pids limit', (i) => (i.HostConfig.PidsLimit = null), 'pids_limit'],
  ['unlimited pids', (i) => (i.HostConfig.PidsLimit = -1), 'pids_limit'],
  ['no memory limit', (i) => { i.HostConfig.Memory = 0; i.HostConfig.MemorySwap = 0; }, 'memory'],
  ['swap above memory', (i) => (i.HostConfig.MemorySwap = i.HostConfig.Memory * 2), 'memory_swap'],
  ['unlimited swap', (i) => (i.HostConfig.MemorySwap = -1), 'memory_swap'],
  ['core ulimit raised', (i) => (i.HostConfig.Ulimits = [{ Name: 'core', Soft: 0, Hard: -1 }]), 'ulimit_core'],
  ['no core ulimit', (i) => (i.HostConfig.Ulimits = []), 'ulimit_core'],
  ['ipc host', (i) => (i.HostConfig.IpcMode = 'host'), 'ipc_mode'],
  ['ipc shareable', (i) => (i.HostConfig.IpcMode = 'shareable'), 'ipc_mode'],
  ['pid host', (i) => (i.HostConfig.PidMode = 'host'), 'pid_mode'],
  ['pid of another container', (i) => (i.HostConfig.PidMode = 'container:x'), 'pid_mode'],
  ['uts host', (i) => (i.HostConfig.UTSMode = 'host'), 'uts_mode'],
  ['userns host', (i) => (i.HostConfig.UsernsMode = 'host'), 'userns_mode'],
  ['a device', (i) => (i.HostConfig.Devices = [{ PathOnHost: '/dev/fuse', PathInContainer: '/dev/fuse', CgroupPermissions: 'rwm' }]), 'devices'],
  ['a GPU request', (i) => (i.HostConfig.DeviceRequests = [{ Count: -1 }]), 'devices'],
  ['a port binding', (i) => (i.HostConfig.PortBindings = { '80/tcp': [{ HostPort: '8080' }] }), 'port_bindings'],
  ['publish all', (i) => (i.HostConfig.PublishAllPorts = true), 'port_bindings'],
  ['a sysctl', (i) => (i.HostConfig.Sysctls = { 'net.ipv4.ip_forward': '1' }), 'sysctls'],
  ['OOM killer disabled', (i) => (i.HostConfig.OomKillDisable = true), 'oom_kill_disable'],
  ['stdin closed', (i) => (i.Config.OpenStdin = false), 'open_stdin'],
  ['a TTY', (i) => (i.Config.Tty = true), 'tty'],
  ['another image', (i) => (i.Image = 'sha256:' + 'cd'.repeat(32)), 'image_mismatch'],
];

for (const [name, weaken, code] of weakenings) {
  test(`admission refuses: ${name}`, () => {
    const i = goodInspect();
    weaken(i);
    assert.deepEqual(admissionViolations(i, IMG), [code]);
  });
}

test('admission refuses an unreadable inspect', () => {
  assert.deepEqual(admissionViolations(null, IMG), ['inspect_shape']);
  assert.deepEqual(admissionViolations({ Config: {} }, IMG), ['inspect_shape']);
});

test('state: running, never restarted', () => {
  assert.deepEqual(stateViolations(goodInspect()), []);
  const r = goodInspect();
  r.RestartCount = 1;
  assert.deepEqual(stateViolations(r), ['restarted']);
  const s = goodInspect();
  s.State.Running = false;
  assert.deepEqual(stateViolations(s), ['not_running']);
});

test('the profile refuses tags', () => {
  assert.throws(() => hardenedProfile('ubuntu:latest'));
  assert.throws(() => hardenedProfile('sha256:abc'));
});
