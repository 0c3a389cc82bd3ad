// `cloakpipe confine-control --control SOCKET --revision N --tools a,b`: send one live
// restriction to a confined session. Exit 0 accepted, 1 refused (admission is now closed until
// a newer valid revision), 2 usage error or no session at that socket.
import { parseFlags, required, UsageError } from './args.js';
import { sendControl } from '../confine/control.js';

const HELP = `usage: cloakpipe confine-control --control SOCKET --revision N --tools a,b [--json]
  send one live restriction (the tools that stay allowed) to a confined session.
  Exit 0 accepted, 1 refused (admission closes until a newer valid revision).
`;

export async function run(argv: string[]): Promise<number> {
  const { values } = parseFlags(argv, {
    control: { type: 'string' },
    revision: { type: 'string' },
    tools: { type: 'string' },
    json: { type: 'boolean' },
  });
  if (values.help) {
    process.stdout.write(HELP);
    return 0;
  }
  const path = required(values.control, '--control');
  const revText = required(values.revision, '--revision');
  if (!/^[1-9][0-9]{0,15}$/.test(revText) || !Number.isSafeInteger(Number(revText))) throw new UsageError('--revision must be a positive integer');
  if (values.tools === undefined) throw new UsageError('missing required --tools');
  const tools = values.tools === '' ? [] : values.tools.split(',').map((t) => t.trim());
  if (tools.some((t) => t === '')) throw new UsageError('--tools: empty tool name');
  let reply;
  try {
    reply = await sendControl(path, Number(revText), tools);
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  if (values.json) process.stdout.write(JSON.stringify(reply) + '\n');
  else process.stdout.write(reply.ok ? `accepted revision ${reply.revision}\n` : 'refused: admission is closed until a newer valid revision\n');
  return reply.ok ? 0 : 1;
}
