// The harness's own connection to the chaos database. PostgreSQL is restarted under it on
// purpose, so every query retries connection-level failures until its deadline.
import { Pool } from 'pg';
import { delay } from './util.js';

const TRANSIENT_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', '57P01', '57P02', '57P03', '08000', '08003', '08006', '08001']);

export function isTransient(err: unknown): boolean {
  const e = err as { code?: string; message?: string };
  if (e?.code && TRANSIENT_CODES.has(e.code)) return true;
  return /terminat|ECONNREFUSED|Connection ended|timeout exceeded when trying to connect|not yet accepting|shutting down/i.test(
    e?.message ?? '',
  );
}

export class HarnessDb {
  readonly pool: Pool;

  constructor(url: string) {
    const u = new URL(url);
    u.searchParams.set('application_name', 'chaos-harness');
    this.pool = new Pool({ connectionString: u.toString(), max: 4, connectionTimeoutMillis: 3000 });
    this.pool.on('error', () => undefined);
  }

  /** One statement; transient failures (server restarting) are retried until `timeoutMs` passes. */
  async query<R = Record<string, unknown>>(sql: string, params: unknown[] = [], timeoutMs = 120_000): Promise<R[]> {
    const deadline = Date.now() + timeoutMs;
    for (let wait = 50; ; wait = Math.min(wait * 2, 500)) {
      try {
        return (await this.pool.query(sql, params)).rows as R[];
      } catch (err) {
        if (!isTransient(err) || Date.now() + wait > deadline) throw err;
        await delay(wait);
      }
    }
  }

  async close(): Promise<void> {
    await this.pool.end().catch(() => undefined);
  }
}
