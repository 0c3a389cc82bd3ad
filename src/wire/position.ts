// Where a parse error is, as people read a file: line and column (both from 1; columns count
// code points), so a hand-edited context or config file can be mended without guessing.
import { WireError } from './strict-parse.js';

export function lineColumn(text: string, offset: number): { line: number; column: number } {
  let line = 1;
  let lineStart = 0;
  for (let i = 0; i < offset && i < text.length; i++) {
    if (text.charCodeAt(i) === 0x0a) {
      line++;
      lineStart = i + 1;
    }
  }
  return { line, column: [...text.slice(lineStart, Math.min(offset, text.length))].length + 1 };
}

/** `line 3, column 14: expected ',' or '}'` (the detail never quotes the text itself). */
export function jsonErrorPosition(text: string, e: WireError): string {
  const detail = e.detail.replace(/ at offset \d+$/, '');
  if (e.at === undefined) return detail;
  const { line, column } = lineColumn(text, e.at);
  return `line ${line}, column ${column}: ${detail}`;
}
