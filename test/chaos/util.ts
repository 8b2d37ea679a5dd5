/** Seeded PRNG (mulberry32): the fault schedule and the workload plan are reproducible from the seed. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export type Rng = () => number;

export const between = (r: Rng, lo: number, hi: number) => lo + r() * (hi - lo);
export const intBetween = (r: Rng, lo: number, hi: number) => Math.floor(between(r, lo, hi + 1));
export const pick = <T>(r: Rng, items: readonly T[]): T | undefined => (items.length ? items[Math.floor(r() * items.length)] : undefined);

export const delay = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, Math.max(0, ms)));

/** Polls `check` until it returns a truthy value; null when the deadline passes first. */
export async function until<T>(check: () => Promise<T> | T, deadlineAt: number, everyMs = 100): Promise<T | null> {
  for (;;) {
    const v = await check();
    if (v) return v;
    if (Date.now() >= deadlineAt) return null;
    await delay(Math.min(everyMs, deadlineAt - Date.now()));
  }
}

/** JSON with sorted keys: compares outputs regardless of key order. */
export function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v && typeof v === 'object') {
    const o = v as Record<string, unknown>;
    return `{${Object.keys(o)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical(o[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(v ?? null);
}

export function percentile(values: number[], p: number): number | null {
  if (!values.length) return null;
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
}

/** Counts by key, with a few samples each (for violations, warnings, errors). */
export class Tally {
  readonly counts: Record<string, number> = {};
  readonly samples: Record<string, unknown[]> = {};

  constructor(private readonly maxSamples = 5) {}

  /** `sample` may be a function: it is only called while this kind still wants samples. */
  add(kind: string, sample?: unknown, n = 1): void {
    this.counts[kind] = (this.counts[kind] ?? 0) + n;
    if (sample === undefined) return;
    const s = (this.samples[kind] ??= []);
    if (s.length < this.maxSamples) s.push(typeof sample === 'function' ? (sample as () => unknown)() : sample);
  }

  get total(): number {
    return Object.values(this.counts).reduce((a, b) => a + b, 0);
  }
}
