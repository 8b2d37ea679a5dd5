import { Client, ClientConfig } from 'pg';
import type { PlanGeneration } from './plan-generation.js';
import type { SqlClient } from './sql-client.js';
import { statementName } from './sql-client.js';

/**
 * No SQLSTATE (socket closed, query timeout), a socket error (ECONNRESET...), a connection
 * exception (class 08) or the server ending the session (57P01-57P03).
 */
function connectionLost(err: unknown): boolean {
  const code = (err as { code?: string }).code;
  return !code || /^E[A-Z]+$/.test(code) || code.startsWith('08') || code.startsWith('57P');
}

/**
 * One connection outside the pool for work that must not queue behind the hot path (claim and
 * lease renewal). Connects lazily; a failed connection is dropped and the next call reconnects.
 * Same `query` shape as SqlClient, so callers take either.
 */
export class DedicatedConnection implements Pick<SqlClient, 'query'> {
  private client: Client | undefined;
  /** The plan generation the connection's cached plans belong to (plan-freshness.ts). */
  private generation = 0;
  private connecting: Promise<Client> | undefined;
  private closed = false;

  constructor(
    private readonly config: () => ClientConfig,
    /** No statement may outlive this (a hung connection is replaced). */
    private readonly queryTimeoutMs: number,
    private readonly plans?: PlanGeneration,
  ) {}

  /** Statements sent here must be safe to send twice: one that met a dead connection is retried once. */
  async query<R = Record<string, unknown>>(sql: string, params: unknown[] = []): Promise<R[]> {
    for (let attempt = 0; ; attempt++) {
      const client = await this.connect();
      try {
        if (this.plans) this.generation = await this.plans.catchUp(client, this.generation);
        const res = await client.query({ name: statementName(sql), text: sql, values: params });
        return res.rows as R[];
      } catch (err) {
        // A statement error on a healthy connection keeps it; a broken or timed-out one is
        // dropped, and (after a server restart, say) the statement goes again on a new one.
        if (!connectionLost(err)) throw err;
        this.drop(client);
        if (attempt > 0) throw err;
      }
    }
  }

  private connect(): Promise<Client> {
    if (this.closed) return Promise.reject(new Error('The dedicated connection is closed'));
    if (this.client) return Promise.resolve(this.client);
    this.connecting ??= (async () => {
      const base = this.config();
      const client = new Client({
        ...base,
        query_timeout: this.queryTimeoutMs,
        // A connect that hangs (server shutting down) must not stall renewal past the TTL.
        connectionTimeoutMillis: Math.min(base.connectionTimeoutMillis ?? 5_000, this.queryTimeoutMs / 2),
        application_name: 'weft-renewal',
      });
      client.on('error', () => this.drop(client));
      try {
        await client.connect();
      } catch (err) {
        this.drop(client);
        throw err;
      }
      if (this.closed) {
        await client.end().catch(() => undefined);
        throw new Error('The dedicated connection is closed');
      }
      this.client = client;
      this.generation = this.plans?.value ?? 0; // a new connection has no cached plans
      return client;
    })().finally(() => (this.connecting = undefined));
    return this.connecting;
  }

  private drop(client: Client): void {
    if (this.client === client) this.client = undefined;
    client.end().catch(() => undefined);
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.connecting?.catch(() => undefined);
    const client = this.client;
    this.client = undefined;
    await client?.end().catch(() => undefined);
  }
}
