// `cloakpipe confine-control --control SOCKET --revision N --tools a,b`: send one live
// restriction to a confined session. Exit 0 accepted, 1 refused (admission is now closed until
// a newer valid revision), 2 usage error or no session at that socket. Whether an update is
// valid is the session's decision, never this client's: a revision that is stale (0 at the
// start) or not an integer, or a tool that was not approved, is sent as given, so that the
// session refuses it and closes admission (confinement.md) instead of never hearing of it.
import { parseFlags, required, UsageError } from './args.js';
import { sendControl } from '../confine/control.js';

const HELP = `usage: cloakpipe confine-control --control SOCKET --revision N --tools a,b [--json]
  send one live restriction (the tools that stay allowed) to a confined session.
  Exit 0 accepted, 1 refused: an update that is stale (not above the revision in force; a
  session starts at 0), invalid, or names a tool not approved at start closes admission until
  a newer valid revision arrives. Exit 2 usage error or no session at that socket.
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
  if (values.tools === undefined) throw new UsageError('missing required --tools');
  // An integer goes as a JSON number (0 and negative ones included: the session refuses them as
  // stale); anything else as the text given, which the session refuses as invalid.
  const revision = /^-?[0-9]{1,16}$/.test(revText) && Number.isSafeInteger(Number(revText)) ? Number(revText) : revText;
  const tools = values.tools === '' ? [] : values.tools.split(',').map((t) => t.trim());
  let reply;
  try {
    reply = await sendControl(path, revision, tools);
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  if (values.json) process.stdout.write(JSON.stringify(reply) + '\n');
  else process.stdout.write(reply.ok ? `accepted revision ${reply.revision}\n` : 'refused: admission is closed until a newer valid revision\n');
  return reply.ok ? 0 : 1;
}
