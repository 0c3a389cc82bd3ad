// An upstream for the durable relay's test: it answers each request with the number of rows the
// relay's database (RECORDS_DB) holds as the request arrives, read at once through its own
// connection, so only what the relay committed counts (a commit takes far longer than the read).
import Database from 'better-sqlite3';

const path = process.env.RECORDS_DB;
if (!path) throw new Error('RECORDS_DB is not set');
const count = new Database(path, { readonly: true }).prepare('SELECT count(*) AS n FROM records');
let buf = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (d: string) => {
  buf += d;
  let i: number;
  while ((i = buf.indexOf('\n')) >= 0) {
    const m = JSON.parse(buf.slice(0, i)) as { id?: unknown };
    buf = buf.slice(i + 1);
    if (m.id === undefined) continue;
    const { n } = count.get() as { n: number };
    process.stdout.write(JSON.stringify({ jsonrpc: '2.0', id: m.id, result: { records: n } }) + '\n');
  }
});
