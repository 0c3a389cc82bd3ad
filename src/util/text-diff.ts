// A unified diff of two texts by lines (for --dry-run): the longest common subsequence of the
// lines between the common head and tail, hunks with three lines of context.
export function unifiedDiff(a: string, b: string, nameA: string, nameB: string): string {
  if (a === b) return '';
  const A = a.split('\n');
  const B = b.split('\n');
  let head = 0;
  while (head < A.length && head < B.length && A[head] === B[head]) head++;
  let tail = 0;
  while (tail < A.length - head && tail < B.length - head && A[A.length - 1 - tail] === B[B.length - 1 - tail]) tail++;
  const a2 = A.slice(head, A.length - tail);
  const b2 = B.slice(head, B.length - tail);
  // ops over the middle: ' ' same, '-' only in a, '+' only in b
  const ops: [string, string][] = [];
  if (a2.length * b2.length > 4_000_000) {
    ops.push(...a2.map((l): [string, string] => ['-', l]), ...b2.map((l): [string, string] => ['+', l]));
  } else {
    const n = a2.length;
    const m = b2.length;
    const L = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
    for (let i = n - 1; i >= 0; i--) for (let j = m - 1; j >= 0; j--) L[i][j] = a2[i] === b2[j] ? L[i + 1][j + 1] + 1 : Math.max(L[i + 1][j], L[i][j + 1]);
    let i = 0;
    let j = 0;
    while (i < n || j < m) {
      if (i < n && j < m && a2[i] === b2[j]) ops.push([' ', a2[i]]), i++, j++;
      else if (i < n && (j >= m || L[i + 1][j] >= L[i][j + 1])) ops.push(['-', a2[i++]]);
      else ops.push(['+', b2[j++]]);
    }
  }
  const all: [string, string][] = [...A.slice(0, head).map((l): [string, string] => [' ', l]), ...ops, ...A.slice(A.length - tail).map((l): [string, string] => [' ', l])];
  const out = [`--- ${nameA}`, `+++ ${nameB}`];
  const C = 3;
  const changed = all.flatMap(([o], x) => (o === ' ' ? [] : [x]));
  for (let g = 0; g < changed.length; ) {
    let h = g;
    while (h + 1 < changed.length && changed[h + 1] - changed[h] <= 2 * C) h++;
    const start = Math.max(0, changed[g] - C);
    const end = Math.min(all.length, changed[h] + C + 1);
    let aLine = 1;
    let bLine = 1;
    for (let x = 0; x < start; x++) {
      if (all[x][0] !== '+') aLine++;
      if (all[x][0] !== '-') bLine++;
    }
    const hunk = all.slice(start, end);
    const aCount = hunk.filter((l) => l[0] !== '+').length;
    const bCount = hunk.filter((l) => l[0] !== '-').length;
    out.push(`@@ -${aCount ? aLine : aLine - 1},${aCount} +${bCount ? bLine : bLine - 1},${bCount} @@`, ...hunk.map(([o, l]) => o + l));
    g = h + 1;
  }
  return out.join('\n') + '\n';
}
