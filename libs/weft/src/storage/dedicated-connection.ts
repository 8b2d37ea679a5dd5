import { Client, ClientConfig } from 'pg';
import type { SqlClient } from './sql-client';
import { statementName } from './sql-client';

/**
 * One connection outside the pool for work that must not queue behind the hot path (claim and
 * lease renewal). Connects lazily; a failed connection is dropped and the next call reconnects.
 * Same `query` shape as SqlClient, so callers take either.
 */
export class DedicatedConnection implements Pick<SqlClient, 'query'> {
  private client: Client | undefined;
  private connecting: Promise<Client> | undefined;
  private closed = false;

  constructor(
    private readonly config: () => ClientConfig,
    /** No statement may outlive this (a hung connection is replaced). */
    private readonly queryTimeoutMs: number,
  ) {}

  async query<R = Record<string, unknown>>(sql: string, params: unknown[] = []): Promise<R[]> {
    const client = await this.connect();
    try {
      const res = await client.query({ name: statementName(sql), text: sql, values: params });
      return res.rows as R[];
    } catch (err) {
      // A statement error on a healthy connection keeps it; a broken or timed-out one is dropped.
      if (!(err as { code?: string }).code) this.drop(client);
      throw err;
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
