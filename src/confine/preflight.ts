// Host preflight: refuse hosts where the container boundary is not the one we reason about.
// Guards against: a VM-backed engine (Docker Desktop and friends: the "local" socket leads to a
// different kernel, and core_pattern/namespaces there are not this host's), a remote engine,
// and a piped core_pattern (Linux ignores RLIMIT_CORE for `|handler` and runs the handler in the
// host's namespaces with the crashing process's memory). It only reads; it never changes host policy.
import { readFileSync, statSync } from 'node:fs';
import type { DockerInfo } from './engine.js';

export type PreflightFailure = 'not_linux' | 'socket_not_local' | 'vm_engine' | 'core_pattern_piped' | 'core_pattern_unreadable' | 'engine_unreachable';

export interface HostFacts {
  platform: string;
  /** Is the engine endpoint a unix socket on this host's filesystem? */
  socketIsLocalUnix: boolean;
  /** Contents of /proc/sys/kernel/core_pattern, or null if unreadable. */
  corePattern: string | null;
  /** GET /info, or null if the engine could not be reached. */
  info: DockerInfo | null;
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
  core_pattern_piped: '/proc/sys/kernel/core_pattern pipes to a handler; refused (the adapter never changes host policy)',
  core_pattern_unreadable: '/proc/sys/kernel/core_pattern is unreadable',
  engine_unreachable: 'the Docker engine is not reachable',
};
