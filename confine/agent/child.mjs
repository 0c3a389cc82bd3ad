// A child process of the agent, trying the network on its own.
import net from 'node:net';
const p = JSON.parse(process.argv[2]);
const data = `child:${p.canary}`;
const tries = [];
for (const k of ['v4', 'v6', 'bridge']) {
  if (!p.targets[k]) continue;
  tries.push(new Promise((resolve) => {
    const s = net.connect({ host: p.targets[k][0], port: p.targets[k][1] });
    s.setTimeout(1500, () => { s.destroy(); resolve(); });
    s.on('connect', () => s.end(data, () => setTimeout(() => { s.destroy(); resolve(); }, 100)));
    s.on('error', resolve);
  }));
}
await Promise.all(tries);
