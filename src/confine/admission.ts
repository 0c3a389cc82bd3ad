// Admission: a pure check of a container's effective configuration (`docker inspect`) against
// the hardened profile. Guards against: an engine, daemon default, image or wrapper that
// weakens what we asked for (an image VOLUME, an inherited mount, a log driver writing the
// agent's output to the host, a different image behind the same name). Run after create and
// again right before the initial payload is written. Any violation refuses the session.

export type Violation =
  | 'image_mismatch'
  | 'network_mode'
  | 'network_attached'
  | 'readonly_rootfs'
  | 'binds'
  | 'mounts'
  | 'volumes'
  | 'volumes_from'
  | 'tmpfs'
  | 'cap_drop'
  | 'cap_add'
  | 'privileged'
  | 'no_new_privileges'
  | 'security_opt'
  | 'masked_paths'
  | 'user'
  | 'group_add'
  | 'log_driver'
  | 'restart_policy'
  | 'pids_limit'
  | 'memory'
  | 'memory_swap'
  | 'ulimit_core'
  | 'ipc_mode'
  | 'pid_mode'
  | 'uts_mode'
  | 'userns_mode'
  | 'devices'
  | 'port_bindings'
  | 'sysctls'
  | 'oom_kill_disable'
  | 'open_stdin'
  | 'tty'
  | 'healthcheck'
  | 'inspect_shape';

const MAX_PIDS = 4096;
const NO_NEW_PRIVILEGES = /^no-new-privileges([:=]true)?$/;
// What every engine since the pinned API (Docker 20.10) masks and mounts read-only in /proc and
// /sys; a newer engine may add to these, never take away.
const MASKED_PATHS = ['/proc/asound', '/proc/acpi', '/proc/kcore', '/proc/keys', '/proc/latency_stats', '/proc/timer_list', '/proc/timer_stats', '/proc/sched_debug', '/proc/scsi', '/sys/firmware'];
const READONLY_PATHS = ['/proc/bus', '/proc/fs', '/proc/irq', '/proc/sys', '/proc/sysrq-trigger'];

const empty = (v: unknown): boolean =>
  v === undefined || v === null || (Array.isArray(v) && v.length === 0) || (typeof v === 'object' && !Array.isArray(v) && Object.keys(v as object).length === 0);

function obj(v: unknown): Record<string, any> | null {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, any>) : null;
}

/** Every weakened field of `inspect` (the JSON of GET /containers/{id}/json); [] means admitted. */
export function admissionViolations(inspect: unknown, pinnedImage: string): Violation[] {
  const c = obj(inspect);
  const hc = obj(c?.HostConfig);
  const cfg = obj(c?.Config);
  if (!c || !hc || !cfg) return ['inspect_shape'];
  const v = new Set<Violation>();

  if (c.Image !== pinnedImage || (cfg.Image !== pinnedImage && cfg.Image !== pinnedImage.slice(7))) v.add('image_mismatch');

  if (hc.NetworkMode !== 'none') v.add('network_mode');
  const nets = obj(obj(c.NetworkSettings)?.Networks) ?? {};
  if (Object.keys(nets).some((n) => n !== 'none')) v.add('network_attached');

  if (hc.ReadonlyRootfs !== true) v.add('readonly_rootfs');
  if (!empty(hc.Binds)) v.add('binds');
  if (!empty(hc.Mounts) || !empty(c.Mounts)) v.add('mounts');
  if (!empty(cfg.Volumes)) v.add('volumes');
  if (!empty(hc.VolumesFrom)) v.add('volumes_from');
  if (!empty(hc.Tmpfs)) v.add('tmpfs');

  const drop = Array.isArray(hc.CapDrop) ? hc.CapDrop.map((x: unknown) => String(x).toUpperCase()) : [];
  if (!drop.includes('ALL') && !drop.includes('CAP_ALL')) v.add('cap_drop');
  if (!empty(hc.CapAdd)) v.add('cap_add');
  if (hc.Privileged !== false) v.add('privileged');

  const sec: string[] = Array.isArray(hc.SecurityOpt) ? hc.SecurityOpt.map((x: unknown) => String(x)) : [];
  if (!sec.some((s) => NO_NEW_PRIVILEGES.test(s))) v.add('no_new_privileges');
  // We ask for no-new-privileges alone. Anything else is not ours, and is not judged by its
  // spelling: a seccomp profile that allows every call is as open as seccomp=unconfined, an
  // SELinux type or AppArmor profile of its own can be as open as label=disable.
  if (sec.some((s) => !NO_NEW_PRIVILEGES.test(s))) v.add('security_opt');
  const listed = (paths: unknown, needed: string[]) => Array.isArray(paths) && needed.every((p) => paths.includes(p));
  if (!listed(hc.MaskedPaths, MASKED_PATHS) || !listed(hc.ReadonlyPaths, READONLY_PATHS)) v.add('masked_paths');

  const user = typeof cfg.User === 'string' ? /^([0-9]+):([0-9]+)$/.exec(cfg.User) : null;
  if (!user || Number(user[1]) === 0 || Number(user[2]) === 0) v.add('user');
  // A supplementary group is a group too: 65534:65534 with group 0 added is the root group.
  if (!empty(hc.GroupAdd)) v.add('group_add');

  const log = obj(hc.LogConfig);
  if (!log || log.Type !== 'none') v.add('log_driver');
  const rp = obj(hc.RestartPolicy);
  if (!rp || (rp.Name !== 'no' && rp.Name !== '') || (rp.MaximumRetryCount ?? 0) !== 0 || hc.AutoRemove === true) v.add('restart_policy');

  if (typeof hc.PidsLimit !== 'number' || hc.PidsLimit <= 0 || hc.PidsLimit > MAX_PIDS) v.add('pids_limit');
  if (typeof hc.Memory !== 'number' || hc.Memory <= 0) v.add('memory');
  if (hc.MemorySwap !== hc.Memory) v.add('memory_swap');
  const ul = Array.isArray(hc.Ulimits) ? hc.Ulimits.filter((u: any) => obj(u)?.Name === 'core') : [];
  if (ul.length !== 1 || ul[0].Soft !== 0 || ul[0].Hard !== 0) v.add('ulimit_core');

  if (hc.IpcMode !== 'private') v.add('ipc_mode');
  if (hc.PidMode !== '' && hc.PidMode !== undefined && hc.PidMode !== 'private') v.add('pid_mode');
  if (hc.UTSMode !== '' && hc.UTSMode !== undefined && hc.UTSMode !== 'private') v.add('uts_mode');
  if (hc.UsernsMode !== '' && hc.UsernsMode !== undefined && hc.UsernsMode !== 'private') v.add('userns_mode');

  if (!empty(hc.Devices) || !empty(hc.DeviceRequests) || !empty(hc.DeviceCgroupRules)) v.add('devices');
  if (!empty(hc.PortBindings) || hc.PublishAllPorts === true) v.add('port_bindings');
  if (!empty(hc.Sysctls)) v.add('sysctls');
  if (hc.OomKillDisable === true) v.add('oom_kill_disable');

  if (cfg.OpenStdin !== true) v.add('open_stdin');
  if (cfg.Tty !== false) v.add('tty');
  // None at all, or turned off: an image's own would run in the container, its output kept by the engine.
  const health = cfg.Healthcheck === undefined || cfg.Healthcheck === null ? null : obj(cfg.Healthcheck);
  if (health !== null && !(Array.isArray(health?.Test) && health.Test.length === 1 && health.Test[0] === 'NONE')) v.add('healthcheck');
  return [...v];
}

/** Right before the payload: the container must be the one we started, running, never restarted. */
export function stateViolations(inspect: unknown): Array<'not_running' | 'restarted'> {
  const c = obj(inspect);
  const st = obj(c?.State);
  const out: Array<'not_running' | 'restarted'> = [];
  if (!st || st.Running !== true || st.Paused === true || st.Restarting === true) out.push('not_running');
  if (!c || (c.RestartCount ?? 0) !== 0) out.push('restarted');
  return out;
}
