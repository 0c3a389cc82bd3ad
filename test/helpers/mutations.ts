// Mutation testing of evidence files: every case changes one thing in a copy of a genuine
// entry; the ones that still verify are returned (a correct verifier returns none).
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Mutable = Record<string, any>;
export type Mutation = [string, (e: Mutable) => void];

/** Each of 40 low bits flipped, and ±1, of one number of the entry. */
export function numberMutations(what: string, get: (e: Mutable) => number, set: (e: Mutable, v: number) => void): Mutation[] {
  const cases: Mutation[] = [];
  for (let bit = 0; bit < 40; bit++) cases.push([`${what}^${bit}`, (e) => set(e, Number(BigInt(get(e)) ^ (1n << BigInt(bit))))]);
  cases.push([`${what}+1`, (e) => set(e, get(e) + 1)], [`${what}-1`, (e) => set(e, get(e) - 1)]);
  return cases;
}

/** The names of the mutations after which `stillValid` holds for the changed copy. */
export function survivors(orig: Mutable, cases: Mutation[], stillValid: (e: Mutable) => boolean): string[] {
  const out: string[] = [];
  for (const [what, mutate] of cases) {
    const e = structuredClone(orig);
    mutate(e);
    if (stillValid(e)) out.push(what);
  }
  return out;
}
