// Operator patterns run on model-controlled input: they must run in linear time, so they are
// compiled with RE2 semantics (re2js), never with the backtracking RegExp engine.
import { RE2JS } from 're2js';

export interface LinearPattern {
  /** The whole input matches (manifest `pattern`). */
  fullMatch(s: string): boolean;
  /** Some part of the input matches (`classify` rules). */
  find(s: string): boolean;
}

export function compilePattern(source: string): LinearPattern {
  const re = RE2JS.compile(source); // throws RE2JSSyntaxException on a bad pattern
  return {
    fullMatch: (s) => re.matches(s),
    find: (s) => re.matcher(s).find(),
  };
}
