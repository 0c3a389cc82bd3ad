#!/usr/bin/env node
// Builds the adversarial agent's image from files on this machine only (no registry, no pull):
// FROM scratch + this host's node binary + the shared libraries `ldd` lists + confine/agent/.
// Cached by content hash: an image labelled with the same hash is reused. Prints the image id
// (sha256:...) on stdout. Usage: node confine/image/build.mjs [--variant volume|healthcheck]
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync, chmodSync, realpathSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const agentDir = resolve(here, '..', 'agent');
const variant = process.argv.includes('--variant') ? process.argv[process.argv.indexOf('--variant') + 1] : '';
const docker = process.env.DOCKER ?? 'docker';
const env = { ...process.env, DOCKER_BUILDKIT: '0' };

function sh(args, opts = {}) {
  return execFileSync(docker, args, { env, encoding: 'utf8', stdio: ['pipe', 'pipe', 'pipe'], ...opts }).trim();
}

function baseFiles() {
  const node = realpathSync(process.execPath);
  const files = [[node, '/usr/bin/node']];
  const out = execFileSync('ldd', [node], { encoding: 'utf8' });
  for (const line of out.split('\n')) {
    const m = /=>\s*(\/\S+)/.exec(line) ?? /^\s*(\/\S+)\s+\(/.exec(line);
    if (m) files.push([realpathSync(m[1]), m[1]]);
  }
  for (const f of readdirSync(agentDir).sort()) files.push([join(agentDir, f), `/agent/${f}`]);
  return files;
}

const DOCKERFILE = `FROM scratch
COPY rootfs/ /
USER 65534:65534
WORKDIR /export
ENTRYPOINT ["/usr/bin/node", "/agent/agent.mjs"]
`;

function build() {
  const files = baseFiles();
  const h = createHash('sha256');
  h.update(DOCKERFILE);
  for (const [src, dst] of files) {
    h.update(dst + '\0');
    h.update(readFileSync(src));
  }
  const hash = h.digest('hex');
  const label = `cloakpipe.confine.hash=${hash}`;
  // Variants built FROM the base inherit its labels: pick the image without a variant label.
  const found = sh(['images', '-q', '--no-trunc', '--filter', `label=${label}`]).split('\n').filter(Boolean);
  for (const id of new Set(found)) {
    const labels = JSON.parse(sh(['image', 'inspect', '--format', '{{json .Config.Labels}}', id]) || '{}') ?? {};
    if (!('cloakpipe.confine.variant' in labels)) return id;
  }
  const ctx = mkdtempSync(join(tmpdir(), 'cloakpipe-image-'));
  try {
    for (const [src, dst] of files) {
      const to = join(ctx, 'rootfs', dst);
      mkdirSync(dirname(to), { recursive: true });
      copyFileSync(src, to);
      chmodSync(to, statSync(src).mode & 0o755);
    }
    mkdirSync(join(ctx, 'rootfs', 'export'), { recursive: true });
    chmodSync(join(ctx, 'rootfs', 'export'), 0o1777);
    writeFileSync(join(ctx, 'Dockerfile'), DOCKERFILE);
    sh(['build', '-q', '--label', label, '-t', 'cloakpipe-confine-agent:build', ctx]);
    return sh(['image', 'inspect', '--format', '{{.Id}}', 'cloakpipe-confine-agent:build']);
  } finally {
    rmSync(ctx, { recursive: true, force: true });
  }
}

/** Variants built FROM the base image: one Dockerfile instruction each. */
const VARIANTS = {
  volume: 'VOLUME /export',
  // A healthcheck of the image's own, which the engine runs inside the container every second
  // and whose output it keeps in the container's state: what the agent left in /dev/shm/c.
  healthcheck: `HEALTHCHECK --interval=1s --timeout=2s --retries=1000 CMD ["/usr/bin/node", "-e", "process.stdout.write(require('fs').readFileSync('/dev/shm/c', 'utf8'))"]`,
};

function buildVariant(base, name) {
  const label = `cloakpipe.confine.variant=${name}-${base.slice(7, 27)}`;
  const found = sh(['images', '-q', '--no-trunc', '--filter', `label=${label}`]).split('\n').filter(Boolean);
  if (found.length) return found[0];
  const ctx = mkdtempSync(join(tmpdir(), 'cloakpipe-image-'));
  try {
    writeFileSync(join(ctx, 'Dockerfile'), `FROM ${base}\n${VARIANTS[name]}\n`);
    sh(['build', '-q', '--label', label, '-t', `cloakpipe-confine-agent:${name}`, ctx]);
    return sh(['image', 'inspect', '--format', '{{.Id}}', `cloakpipe-confine-agent:${name}`]);
  } finally {
    rmSync(ctx, { recursive: true, force: true });
  }
}

if (variant && !Object.hasOwn(VARIANTS, variant)) throw new Error(`unknown --variant ${variant}`);
const base = build();
process.stdout.write((variant ? buildVariant(base, variant) : base) + '\n');
