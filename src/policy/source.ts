// The policy file as text: split into its policies (each keeps its offset, so a problem Cedar
// reports inside one policy is shown at its line and column in the file), string decoding, and
// a finder for entity literals such as `Tool::"send_email"`. Cedar's lexical rules that matter
// here: strings in double quotes with backslash escapes, `//` comments to end of line, and `;`
// ending each policy.

export interface PolicySource {
  /** Offset (UTF-16 code units) in the file of the policy's first token. */
  offset: number;
  /** The policy's text, from its first token (annotations included) to its `;`. */
  text: string;
}

interface Token {
  kind: 'string' | 'ident' | 'punct';
  start: number;
  end: number;
  value: string;
}

/** Cedar's escapes: \n \r \t \\ \0 \' \" \u{hex}. Unknown escapes are kept as written. */
export function decodeCedarString(body: string): string {
  return body.replace(/\\(u\{([0-9a-fA-F]{1,6})\}|[nrt\\0'"*])/g, (_m, e: string, hex?: string) => {
    if (hex) return String.fromCodePoint(parseInt(hex, 16));
    switch (e) {
      case 'n':
        return '\n';
      case 'r':
        return '\r';
      case 't':
        return '\t';
      case '0':
        return '\0';
      case '*':
        return '\\*';
      default:
        return e;
    }
  });
}

function tokenize(text: string): Token[] {
  const out: Token[] = [];
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    if (c === '/' && text[i + 1] === '/') {
      while (i < text.length && text[i] !== '\n') i++;
    } else if (/\s/.test(c)) {
      i++;
    } else if (c === '"') {
      const start = i++;
      while (i < text.length && text[i] !== '"') i += text[i] === '\\' ? 2 : 1;
      i++;
      out.push({ kind: 'string', start, end: i, value: decodeCedarString(text.slice(start + 1, i - 1)) });
    } else if (/[A-Za-z_]/.test(c)) {
      const start = i;
      while (i < text.length && /[A-Za-z0-9_]/.test(text[i])) i++;
      out.push({ kind: 'ident', start, end: i, value: text.slice(start, i) });
    } else if (c === ':' && text[i + 1] === ':') {
      out.push({ kind: 'punct', start: i, end: i + 2, value: '::' });
      i += 2;
    } else {
      out.push({ kind: 'punct', start: i, end: i + 1, value: c });
      i++;
    }
  }
  return out;
}

/** The policies of a file, in order. Text after the last `;` that holds a token is returned as
 *  a last policy too, so Cedar reports it as the parse error it is. */
export function splitPolicies(text: string): PolicySource[] {
  const out: PolicySource[] = [];
  let first = -1;
  for (const t of tokenize(text)) {
    if (first < 0) first = t.start;
    if (t.kind === 'punct' && t.value === ';') {
      out.push({ offset: first, text: text.slice(first, t.end) });
      first = -1;
    }
  }
  if (first >= 0) out.push({ offset: first, text: text.slice(first) });
  return out;
}

/** Where `Type::"id"` is written in a policy's text (offset into it), or undefined. */
export function findEntityLiteral(text: string, type: string, id: string): { start: number; end: number } | undefined {
  const toks = tokenize(text);
  for (let i = 0; i + 2 < toks.length; i++) {
    const [a, b, c] = [toks[i], toks[i + 1], toks[i + 2]];
    if (a.kind === 'ident' && a.value === type && b.value === '::' && c.kind === 'string' && c.value === id) {
      // Not the tail of a namespaced path (`Other::Tool::"x"`).
      if (i > 0 && toks[i - 1].value === '::') continue;
      return { start: a.start, end: c.end };
    }
  }
  return undefined;
}

/** Cedar reports offsets in UTF-8 bytes; convert one to a UTF-16 offset in `text`. */
export function byteToCharOffset(text: string, byteOffset: number): number {
  const buf = Buffer.from(text, 'utf8');
  return buf.subarray(0, Math.max(0, Math.min(byteOffset, buf.length))).toString('utf8').length;
}

/** 1-based line and column (in code points) of a UTF-16 offset. */
export function lineColumn(text: string, offset: number): { line: number; column: number } {
  const before = text.slice(0, offset);
  const line = before.split('\n').length;
  const lineStart = before.lastIndexOf('\n') + 1;
  return { line, column: [...text.slice(lineStart, offset)].length + 1 };
}

/** The line holding `offset`, and a caret line under [offset, end). */
export function excerpt(text: string, offset: number, end: number): string {
  const lineStart = text.lastIndexOf('\n', offset - 1) + 1;
  let lineEnd = text.indexOf('\n', offset);
  if (lineEnd < 0) lineEnd = text.length;
  const line = text.slice(lineStart, lineEnd);
  const col = [...text.slice(lineStart, offset)].length;
  const width = Math.max(1, [...text.slice(offset, Math.min(end, lineEnd))].length);
  return `${line}\n${' '.repeat(col)}${'^'.repeat(width)}`;
}
