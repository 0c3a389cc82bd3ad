// The hardened container profile of confinement.md: the only create body `confine` ever sends.
// Guards against: a default that quietly opens a route out (network, writable root, a log file
// on the host, core dumps, extra capabilities, privilege gain through setuid binaries).
// admission.ts checks the effective result; this file only says what we ask for.
import { randomBytes } from 'node:crypto';

export const CONFINED_USER = '65534:65534';
export const PIDS_LIMIT = 64;
export const MEMORY_BYTES = 256 * 1024 * 1024;
export const IMAGE_ID = /^sha256:[0-9a-f]{64}$/;
/** The name a session gives its container before creating it, so the watchdog can find it. */
export const CONTAINER_NAME = /^cloakpipe-confine-[0-9a-f]{32}$/;

export function containerName(): string {
  return `cloakpipe-confine-${randomBytes(16).toString('hex')}`;
}

export interface CreateBody {
  Image: string;
  User: string;
  AttachStdin: boolean;
  AttachStdout: boolean;
  AttachStderr: boolean;
  OpenStdin: boolean;
  StdinOnce: boolean;
  Tty: boolean;
  NetworkDisabled: boolean;
  Env: string[];
  Labels: Record<string, string>;
  HostConfig: Record<string, unknown>;
  [k: string]: unknown;
}

/** The create body for one confined session. `imageId` must already be a pinned `sha256:` id. */
export function hardenedProfile(imageId: string): CreateBody {
  if (!IMAGE_ID.test(imageId)) throw new Error('image must be an immutable local id (sha256:<64 hex>)');
  return {
    Image: imageId,
    User: CONFINED_USER,
    AttachStdin: true,
    AttachStdout: true,
    AttachStderr: true,
    OpenStdin: true,
    // Closing our attach closes the agent's stdin: it sees EOF instead of waiting forever.
    StdinOnce: true,
    Tty: false,
    NetworkDisabled: true,
    Env: [],
    Labels: { 'cloakpipe.confine': '1' },
    // An image's HEALTHCHECK is a command the engine runs inside the container every interval,
    // its output kept in the container's state on the host (inspect: State.Health.Log): off.
    Healthcheck: { Test: ['NONE'] },
    HostConfig: {
      NetworkMode: 'none',
      ReadonlyRootfs: true,
      Binds: [],
      Mounts: [],
      VolumesFrom: [],
      Tmpfs: {},
      CapDrop: ['ALL'],
      CapAdd: [],
      Privileged: false,
      SecurityOpt: ['no-new-privileges'],
      LogConfig: { Type: 'none', Config: {} },
      RestartPolicy: { Name: 'no', MaximumRetryCount: 0 },
      AutoRemove: false,
      PidsLimit: PIDS_LIMIT,
      Memory: MEMORY_BYTES,
      MemorySwap: MEMORY_BYTES,
      Ulimits: [{ Name: 'core', Soft: 0, Hard: 0 }],
      IpcMode: 'private',
      PidMode: '',
      UTSMode: '',
      UsernsMode: '',
      Devices: [],
      DeviceRequests: [],
      PortBindings: {},
      PublishAllPorts: false,
      OomKillDisable: false,
    },
  };
}
