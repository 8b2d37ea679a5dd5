/** The most intervals open at one instant (an end at the same instant as a begin closes first). */
export function maxOverlap(intervals: Array<{ from: number; to: number }>): number {
  const edges = intervals.flatMap((i) => [
    [i.from, 1],
    [i.to, -1],
  ]);
  edges.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let open = 0;
  let max = 0;
  for (const [, d] of edges) max = Math.max(max, (open += d));
  return max;
}
