// Text read from a ledger or an operations store, printed to an operator's terminal. A row a
// forger wrote (ledger show prints unverified rows too) or a stored value can hold escape
// sequences and invisible or reordering characters (ESC [2K, U+202E): printed raw, they rewrite
// what the auditor sees. Each such character is shown as its \u escape instead.
const HIDDEN = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Default_Ignorable_Code_Point}]/gu;

const escaped = (c: string) => {
  const hex = c.codePointAt(0)!.toString(16);
  return hex.length <= 4 ? '\\u' + hex.padStart(4, '0') : `\\u{${hex}}`;
};

export function visible(text: string): string {
  return text.replace(HIDDEN, escaped);
}

/** The same for text of many lines (a diff, a file's lines): its line breaks and tabs are kept. */
export function visibleLines(text: string): string {
  return text.replace(HIDDEN, (c) => (c === '\n' || c === '\r' || c === '\t' ? c : escaped(c)));
}
