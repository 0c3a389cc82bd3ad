// A string as a model reads it, for classify rules to read too: a marker a model reads plainly
// must not slip past a rule by its spelling. Compatibility forms are folded (NFKC: fullwidth
// and mathematical letters and digits), invisible characters that split a marker are dropped
// (zero-width, soft hyphen, bidi controls: Default_Ignorable_Code_Point), Unicode tag
// characters, invisible but read as ASCII by models, become that ASCII, and Cyrillic and Greek
// letters that look like Latin ones (UTS #39 confusables: a Cyrillic А in ACCT) become the Latin
// letter. Not a defence against an encoding chosen to hide (base64 hides as well, ADR 113); it
// closes the spellings that cost nothing. ASCII strings, most of them, skip all of it.
const ASCII = /^[\x00-\x7f]*$/;
const TAG = /[\u{E0020}-\u{E007E}]/gu;
const INVISIBLE = /\p{Default_Ignorable_Code_Point}/gu;

// Cyrillic and Greek letters whose UTS #39 skeleton is one Latin letter (confusables.txt), the
// letters themselves after NFKC. Pairs: look-alike, Latin.
const LOOK_ALIKES =
  'АAВBЕEЅSІIЈJКKМMНHОOРPСCТTХXҮYԚQԜWӀIаaеeѕsіiјjһhоoрpсcуyхxԁdԛqԝwүyӏl' + // Cyrillic
  'ΑAΒBΕEΖZΗHΙIΚKΜMΝNΟOΡPΤTΥYΧXοoνvαaρpϳjιiυuγy'; // Greek
/** Code unit → its Latin letter, 0 for every other (all look-alikes are in U+0370..U+052F). */
const FIRST = 0x370;
const LATIN = new Uint16Array(0x530 - FIRST);
for (let i = 0; i < LOOK_ALIKES.length; i += 2) LATIN[LOOK_ALIKES.charCodeAt(i) - FIRST] = LOOK_ALIKES.charCodeAt(i + 1);
const UTF16 = new TextDecoder('utf-16le');
const GREEK_OR_CYRILLIC = /[\u0370-\u052f]/;

/** `t` with every look-alike made its Latin letter: one pass over code units, no call per letter. */
function latin(t: string): string {
  if (!GREEK_OR_CYRILLIC.test(t)) return t; // most non-ASCII text: one native pass
  let units: Uint16Array | null = null;
  for (let i = 0; i < t.length; i++) {
    const unit = t.charCodeAt(i);
    const l = unit >= FIRST && unit - FIRST < LATIN.length ? LATIN[unit - FIRST] : 0;
    if (l === 0) {
      if (units !== null) units[i] = unit;
      continue;
    }
    if (units === null) {
      units = new Uint16Array(t.length);
      for (let j = 0; j < i; j++) units[j] = t.charCodeAt(j);
    }
    units[i] = l;
  }
  if (units === null) return t;
  return UTF16.decode(units);
}

/** The string as a model reads it, or null when that is the string itself (every ASCII string). */
export function readable(s: string): string | null {
  if (ASCII.test(s)) return null; // the common case, one pass and no copy
  const t = s
    .replace(TAG, (c) => String.fromCharCode(c.codePointAt(0)! - 0xe0000))
    .normalize('NFKC')
    .replace(INVISIBLE, '');
  const u = latin(t);
  return u === s ? null : u;
}
