// The headers an operator gives for a remote upstream (`--upstream-header "Name: value"` and
// `--upstream-header-file FILE`): credentials, so every check names the header (or the file and
// line) and never shows a value. What guards against what:
// - a name the transport sets itself (Host, Content-Length, Mcp-Session-Id, …) would let a header
//   take over the request's framing or the session: refused;
// - CR, LF, NUL or any other control byte in a value would split the header line (request
//   smuggling) or be cut silently: refused, as is anything but visible ASCII, space and tab;
// - a header file that others can read or write leaks or swaps the credential: refused, as
//   OpenSSH refuses a private key with such a mode; one that is not a regular file (a FIFO that
//   never ends, a device) or is larger than a header file can be is refused too.
import { closeSync, fstatSync, openSync, readSync, constants as fsc } from 'node:fs';

export class UpstreamHeaderError extends Error {}

/** Headers the transport sets itself or that would change how the request is framed. */
export const RESERVED_HEADERS = new Set([
  'accept', 'content-type', 'content-length', 'content-encoding', 'mcp-session-id', 'mcp-protocol-version', 'host',
  'connection', 'proxy-connection', 'transfer-encoding', 'last-event-id', 'te', 'trailer', 'upgrade', 'keep-alive', 'expect', 'http2-settings',
]);

/** RFC 9110 token: what a header name may be. */
const NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** Visible ASCII, space and tab: nothing that splits or ends the header line, nothing a server decodes differently. */
const VALUE = /^[\t\x20-\x7e]+$/;
/** A header file is a handful of lines; more is not a header file. */
export const MAX_HEADER_FILE_BYTES = 64 * 1024;

/** One `Name: value`; `where` says where it came from (a flag, a file and line), never the value. */
export function parseHeaderLine(text: string, where = '--upstream-header'): [string, string] {
  const colon = text.indexOf(':');
  const name = colon < 0 ? '' : text.slice(0, colon).trim();
  if (!NAME.test(name)) throw new UpstreamHeaderError(`${where} must be "Name: value" with a header name before the colon`);
  if (RESERVED_HEADERS.has(name.toLowerCase())) throw new UpstreamHeaderError(`${where}: ${name}: the gate sets this header itself`);
  const value = text.slice(colon + 1).trim();
  if (value === '') throw new UpstreamHeaderError(`${where}: ${name}: the value is empty`);
  if (!VALUE.test(value)) throw new UpstreamHeaderError(`${where}: ${name}: the value holds a line break, NUL or another byte that is not visible ASCII, space or tab`);
  return [name, value];
}

/** `--upstream-header "Name: value"`: the name is checked, the value never echoed. */
export const parseUpstreamHeader = (text: string): [string, string] => parseHeaderLine(text);

/** The same header named twice (any case) would reach the server as two values: refused. */
export function checkUnique(headers: [string, string][], what: string): void {
  const lower = headers.map(([n]) => n.toLowerCase());
  const twice = lower.find((n, i) => lower.indexOf(n) !== i);
  if (twice !== undefined) throw new UpstreamHeaderError(`${what}: ${twice} is given twice`);
}

/**
 * `--upstream-header-file FILE`: one `Name: value` a line (LF or CRLF line ends; blank lines and
 * lines starting with # are skipped). Strict: one bad line refuses the whole file, naming its
 * line number only.
 */
export function readHeaderFile(path: string): [string, string][] {
  const flag = `--upstream-header-file ${path}`;
  let fd: number;
  try {
    fd = openSync(path, fsc.O_RDONLY | (fsc.O_NONBLOCK ?? 0));
  } catch (e) {
    throw new UpstreamHeaderError(`${flag}: cannot open it (${(e as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  let bytes: Buffer;
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw new UpstreamHeaderError(`${flag}: not a regular file`);
    if (process.platform !== 'win32') {
      if ((st.mode & 0o077) !== 0) throw new UpstreamHeaderError(`${flag}: others may read or write it (mode ${(st.mode & 0o777).toString(8).padStart(4, '0')}; it holds credentials: chmod 600 it)`);
      const uid = process.getuid?.();
      if (uid !== undefined && st.uid !== uid && st.uid !== 0) throw new UpstreamHeaderError(`${flag}: owned by another user (uid ${st.uid})`);
    }
    if (st.size > MAX_HEADER_FILE_BYTES) throw new UpstreamHeaderError(`${flag}: larger than ${MAX_HEADER_FILE_BYTES} bytes`);
    bytes = Buffer.alloc(MAX_HEADER_FILE_BYTES + 1);
    let n = 0;
    for (let r; n < bytes.length && (r = readSync(fd, bytes, n, bytes.length - n, null)) > 0; ) n += r;
    if (n > MAX_HEADER_FILE_BYTES) throw new UpstreamHeaderError(`${flag}: larger than ${MAX_HEADER_FILE_BYTES} bytes`);
    bytes = bytes.subarray(0, n);
  } finally {
    closeSync(fd);
  }
  return parseHeaderFile(bytes, flag);
}

/** The file's text, checked line by line (exported for the parser's own tests). */
export function parseHeaderFile(bytes: Uint8Array, flag = '--upstream-header-file'): [string, string][] {
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(bytes);
  } catch {
    throw new UpstreamHeaderError(`${flag}: not UTF-8`);
  }
  const headers: [string, string][] = [];
  const lines = text.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  lines.forEach((raw, i) => {
    // A CRLF line end is a line end; a CR anywhere else would split the header line upstream.
    const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    const where = `${flag} line ${i + 1}`;
    if (line.includes('\r')) throw new UpstreamHeaderError(`${where}: holds a CR inside the line`);
    if (line.trim() === '' || line.startsWith('#')) return;
    headers.push(parseHeaderLine(line, where));
  });
  if (headers.length === 0) throw new UpstreamHeaderError(`${flag}: holds no header`);
  checkUnique(headers, flag);
  return headers;
}

/** A header file's text for `headers` (what wrap writes; read back by readHeaderFile). */
export function headerFileText(headers: [string, string][]): string {
  for (const [n, v] of headers) parseHeaderLine(`${n}: ${v}`, `header ${n}`);
  checkUnique(headers, 'headers');
  return '# upstream headers written by cloakpipe wrap (credentials: keep this file 0600)\n' + headers.map(([n, v]) => `${n}: ${v}\n`).join('');
}
