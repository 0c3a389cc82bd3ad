// A string as a model reads it, for classify rules to read too: a marker a model reads plainly
// must not slip past a rule by its spelling. Compatibility forms are folded (NFKC: fullwidth
// and mathematical letters and digits), invisible characters that split a marker are dropped
// (zero-width, soft hyphen, bidi controls: Default_Ignorable_Code_Point), and Unicode tag
// characters, invisible but read as ASCII by models, become that ASCII. Not a defence against
// an encoding chosen to hide (base64 hides as well); it closes the spellings that cost nothing.
const ASCII = /^[\x00-\x7f]*$/;
const TAG = /[\u{E0020}-\u{E007E}]/gu;
const INVISIBLE = /\p{Default_Ignorable_Code_Point}/gu;

/** The string as a model reads it, or null when that is the string itself (every ASCII string). */
export function readable(s: string): string | null {
  if (ASCII.test(s)) return null; // the common case, one pass and no copy
  const t = s.replace(TAG, (c) => String.fromCharCode(c.codePointAt(0)! - 0xe0000)).normalize('NFKC').replace(INVISIBLE, '');
  return t === s ? null : t;
}
