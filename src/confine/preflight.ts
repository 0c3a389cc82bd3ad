// Host preflight: refuse hosts where the container boundary is not the one we reason about.
// Guards against: a VM-backed engine (Docker Desktop and friends: the "local" socket leads to a
// different kernel, and core_pattern/namespaces there are not this host's), a remote engine,
// and a piped core_pattern (Linux ignores RLIMIT_CORE for `|handler` and runs the handler in the
// host's namespaces with the crashing process's memory). It only reads; it never changes host policy.
// An engine on another kernel than this host's (a VM's or another machine's socket forwarded to a
// local path, under a name the VM list does not know) is refused too: its containers run where
// neither the core_pattern read here nor this host's namespaces hold.
import { readFileSync, statSync } from 'node:fs';
import type { DockerInfo } from './engine.js';

export type PreflightFailure = 'not_linux' | 'socket_not_local' | 'vm_engine' | 'other_kernel' | 'core_pattern_piped' | 'core_pattern_unreadable' | 'engine_unreachable';

export interface HostFacts {
  platform: string;
  /** Is the engine endpoint a unix socket on this host's filesystem? */
  socketIsLocalUnix: boolean;
  /** Contents of /proc/sys/kernel/core_pattern, or null if unreadable. */
  corePattern: string | null;
  /** GET /info, or null if the engine could not be reached. */
  info: DockerInfo | null;
  /** This host's kernel release (uname -r), which a local engine reports as its KernelVersion. */
  kernel: string;
}

/** Pure decision over gathered facts. */
export function preflightFailures(f: HostFacts): PreflightFailure[] {
  const out: PreflightFailure[] = [];
  if (f.platform !== 'linux') out.push('not_linux');
  if (!f.socketIsLocalUnix) out.push('socket_not_local');
  if (f.corePattern === null) out.push('core_pattern_unreadable');
  else if (f.corePattern.trimStart().startsWith('|')) out.push('core_pattern_piped');
  if (!f.info) out.push('engine_unreachable');
  else {
    const os = String(f.info.OperatingSystem ?? '');
    const kernel = String(f.info.KernelVersion ?? '');
    const name = String(f.info.Name ?? '');
    if (/docker desktop|boot2docker|colima|rancher desktop|orbstack/i.test(os) || /linuxkit/i.test(kernel) || /^(docker-desktop|colima|lima-)/i.test(name)) {
      out.push('vm_engine');
    }
    if (f.info.OSType !== undefined && f.info.OSType !== 'linux') out.push('vm_engine');
    if (kernel !== f.kernel) out.push('other_kernel');
  }
  return [...new Set(out)];
}

export function isLocalUnixSocket(path: string, env: NodeJS.ProcessEnv = process.env): boolean {
  // A DOCKER_HOST pointing elsewhere (tcp://, ssh://) means the engine we would use is not local.
  const dh = env.DOCKER_HOST;
  if (dh && !(dh === `unix://${path}`)) return false;
  try {
    return statSync(path).isSocket();
  } catch {
    return false;
  }
}

export function readCorePattern(): string | null {
  try {
    return readFileSync('/proc/sys/kernel/core_pattern', 'utf8');
  } catch {
    return null;
  }
}

export const PREFLIGHT_TEXT: Record<PreflightFailure, string> = {
  not_linux: 'confine runs on Linux only',
  socket_not_local: 'the Docker engine socket is not a local unix socket',
  vm_engine: 'the Docker engine runs in a VM (Docker Desktop or similar); refused',
  other_kernel: "the Docker engine runs on another kernel than this host's (a VM or another machine behind a local socket); refused",
  core_pattern_piped: '/proc/sys/kernel/core_pattern pipes to a handler; refused (the adapter never changes host policy)',
  core_pattern_unreadable: '/proc/sys/kernel/core_pattern is unreadable',
  engine_unreachable: 'the Docker engine is not reachable',
};
