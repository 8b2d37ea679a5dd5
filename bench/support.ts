import type { WorkflowContext } from '@weft/nest';
import { randomBytes } from 'node:crypto';
import * as os from 'node:os';
import { Client } from 'pg';

/** Server for benchmarks: BENCH_DATABASE_URL, else the local one on 127.0.0.1:5432. */
export const adminUrl = () =>
  process.env.BENCH_DATABASE_URL ?? process.env.WEFT_TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

export async function withFreshDatabase<T>(fn: (url: string, name: string) => Promise<T>): Promise<T> {
  const name = `weft_bench_${randomBytes(4).toString('hex')}`;
  const admin = new Client({ connectionString: adminUrl() });
  await admin.connect();
  await admin.query(`CREATE DATABASE "${name}"`);
  const u = new URL(adminUrl());
  u.pathname = `/${name}`;
  try {
    return await fn(u.toString(), name);
  } finally {
    await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    await admin.end();
  }
}

export async function xactCommits(url: string, name: string): Promise<number> {
  const c = new Client({ connectionString: url });
  await c.connect();
  try {
    // Stats are per backend until flushed; force a fresh snapshot.
    await c.query('SELECT pg_stat_clear_snapshot()');
    const r = await c.query('SELECT xact_commit::bigint AS n FROM pg_stat_database WHERE datname = $1', [name]);
    return Number(r.rows[0].n);
  } finally {
    await c.end();
  }
}

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i];
}

export const round = (n: number, digits = 2) => Math.round(n * 10 ** digits) / 10 ** digits;

export function machine() {
  return { cpus: os.cpus().length, cpuModel: os.cpus()[0]?.model, memGiB: round(os.totalmem() / 2 ** 30, 1), node: process.version };
}

/** The benches' workload: three no-op steps. */
export class ThreeNoops {
  async run(ctx: WorkflowContext, input: { n: number }) {
    const a = await ctx.step('a', () => input.n);
    const b = await ctx.step('b', () => a + 1);
    return ctx.step('c', () => b + 1);
  }
}

/** Benches print JSON on stdout: the engine's logs go to stderr, warnings and errors only. */
export const silent = {
  log: () => undefined,
  warn: (m: string) => process.stderr.write(`${m}\n`),
  error: (m: string) => process.stderr.write(`${m}\n`),
};
