// nst/JSONTestSuite, read byte for byte from the shared fixtures beside the repository
// (`../shared/fixtures/jsontestsuite`), where a fresh clone in CI finds them too.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from './cli.js';

export const SUITE = join(ROOT, '../shared/fixtures/jsontestsuite');

export interface SuiteFile {
  name: string;
  bytes: Buffer;
}

/** Every file of one corpus (`test_parsing` or `test_transform`), sorted by name. */
export function corpus(which: 'test_parsing' | 'test_transform'): SuiteFile[] {
  const dir = join(SUITE, which);
  // Missing fixtures are a failure, never a skip: green must mean the corpus ran.
  if (!existsSync(dir)) throw new Error(`JSONTestSuite corpus not found at ${dir}`);
  return readdirSync(dir)
    .filter((n) => n.endsWith('.json'))
    .sort()
    .map((name) => ({ name, bytes: readFileSync(join(dir, name)) }));
}

export function suiteFile(which: 'test_parsing' | 'test_transform', name: string): Buffer {
  return readFileSync(join(SUITE, which, name));
}

// A handful that covers each kind of verdict: plain values, astral characters, U+2028 (a line
// break to JavaScript, not to the framer), an escaped NUL in a key, a number forwarded in
// another spelling, a lone null; the strict rules that refuse valid JSON; syntax, invalid UTF-8,
// NUL bytes, raw tabs, 50,000 unclosed containers; lone surrogates, deep nesting, a huge
// exponent, a BOM; the NFC/NFD key pair.
export const REPRESENTATIVE: ['test_parsing' | 'test_transform', string][] = [
  ['test_parsing', 'y_object_basic.json'],
  ['test_parsing', 'y_string_accepted_surrogate_pairs.json'],
  ['test_parsing', 'y_string_u+2028_line_sep.json'],
  ['test_parsing', 'y_object_escaped_null_in_key.json'],
  ['test_parsing', 'y_number_real_capital_e_neg_exp.json'],
  ['test_parsing', 'y_structure_lonely_null.json'],
  ['test_parsing', 'y_string_nonCharacterInUTF-8_U+FFFF.json'],
  ['test_parsing', 'y_object_duplicated_key.json'],
  ['test_parsing', 'y_number.json'],
  ['test_parsing', 'n_object_trailing_comma.json'],
  ['test_parsing', 'n_number_with_alpha_char.json'],
  ['test_parsing', 'n_string_invalid_utf8_after_escape.json'],
  ['test_parsing', 'n_structure_null-byte-outside-string.json'],
  ['test_parsing', 'n_string_unescaped_tab.json'],
  ['test_parsing', 'n_structure_open_array_object.json'],
  ['test_parsing', 'i_string_UTF8_surrogate_U+D800.json'],
  ['test_parsing', 'i_structure_500_nested_arrays.json'],
  ['test_parsing', 'i_number_huge_exp.json'],
  ['test_parsing', 'i_string_lone_second_surrogate.json'],
  ['test_parsing', 'i_structure_UTF-8_BOM_empty_object.json'],
  ['test_transform', 'object_key_nfc_nfd.json'],
  ['test_transform', 'number_1.0.json'],
];
