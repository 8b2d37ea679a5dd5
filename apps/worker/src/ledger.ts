// Side-effect ledger: every chaos step body appends one row, through this process's own pg
// pool (not Weft's), tagged with the engine id, the pid and the workflow's claim as the database
// sees it at that instant (under ownership 'lease': the global lease). The chaos harness proves
// from it which bodies ran, where, under which claim epoch, whether the result of that step was
// already recorded when the body ran, and (end-of-body mark) which bodies finished.
import { Pool } from 'pg';

const IDENT = /^[a-z_][a-z0-9_]*$/;

function ident(name: string, what: string): string {
  if (!IDENT.test(name)) throw new Error(`${what} must match ${IDENT} (got ${JSON.stringify(name)})`);
  return `"${name}"`;
}

export interface LedgerEntry {
  workflowId: string;
  seq: number;
  step: string;
  attempt: number;
  bodyStartedMs: number;
  /** When this engine started the step's first attempt (of the retry loop this body belongs to). */
  stepStartedMs: number;
  /** A heartbeating step's body: the chunk its lastHeartbeat named when it began (-1: none). */
  progressFrom?: number;
}

export class Ledger {
  readonly pool: Pool;
  private readonly insertSql: string;
  private readonly finishSql: string;
  private readonly txRowSql: string;
  /** End-of-body marks not yet written (they are written in the background, with retries). */
  private readonly marks = new Set<Promise<void>>();

  constructor(
    url: string,
    private readonly engineId: string,
    weftSchema: string,
    private readonly ledgerSchema: string,
    max = 4,
    ownership = 'workflow-lease',
  ) {
    this.pool = new Pool({ connectionString: url, max, connectionTimeoutMillis: 5000 });
    // Without a listener an idle client's error (e.g. the server restarting) would crash the process.
    this.pool.on('error', () => undefined);
    const weft = ident(weftSchema, 'WEFT_SCHEMA');
    const ledger = ident(ledgerSchema, 'LEDGER_SCHEMA');
    // Under 'lease' the unit of ownership is the store-wide lease, not a per-workflow claim.
    const claim =
      ownership === 'lease'
        ? `LEFT JOIN (SELECT epoch, holder AS engine_id, expires_at FROM ${weft}.weft_global_lease WHERE id = 1) c ON true`
        : `LEFT JOIN ${weft}.weft_workflow_claims c ON c.workflow_id = $1`;
    this.insertSql = `
      INSERT INTO ${ledger}.ledger (workflow_id, seq, step, attempt, engine, pid, body_started, step_started,
                                    claim_epoch, claim_engine, claim_live, op_recorded, progress_from)
      SELECT $1, $2, $3, $4, $5, $6, to_timestamp($7::double precision / 1000.0), to_timestamp($8::double precision / 1000.0),
             c.epoch, c.engine_id, COALESCE(c.expires_at > clock_timestamp(), false),
             EXISTS (SELECT 1 FROM ${weft}.weft_operations o WHERE o.workflow_id = $1 AND o.seq = $2), $9::int
      FROM (VALUES (1)) AS one(x) ${claim}
      RETURNING id::text AS id`;
    this.txRowSql = `INSERT INTO ${ledger}.tx_rows (workflow_id, seq, lid, engine) VALUES ($1, $2, $3::bigint, $4)`;
    this.finishSql = `UPDATE ${ledger}.ledger SET body_finished = to_timestamp($2::double precision / 1000.0), finished_aborted = $3
                      WHERE id = $1::bigint`;
  }

  /** Creates the ledger table if the harness has not (standalone use). */
  async ensure(): Promise<void> {
    const schema = ident(this.ledgerSchema, 'LEDGER_SCHEMA');
    await this.pool.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
    await this.pool.query(`CREATE TABLE IF NOT EXISTS ${schema}.ledger (
      id bigserial PRIMARY KEY, workflow_id text NOT NULL, seq int NOT NULL, step text NOT NULL, attempt int NOT NULL,
      engine text NOT NULL, pid int NOT NULL, body_started timestamptz NOT NULL, step_started timestamptz NOT NULL,
      at timestamptz NOT NULL DEFAULT clock_timestamp(),
      claim_epoch bigint, claim_engine text, claim_live boolean NOT NULL, op_recorded boolean NOT NULL,
      body_finished timestamptz, finished_aborted boolean, progress_from int)`);
    await this.pool.query(`CREATE TABLE IF NOT EXISTS ${schema}.tx_rows (
      workflow_id text NOT NULL, seq int NOT NULL, lid bigint NOT NULL, engine text NOT NULL)`);
  }

  /**
   * The application row of a transactional step ('chaos.txsteps'), written through `via`, the
   * step's own transaction: it commits iff the step's record does. `lid`: the body's ledger row.
   */
  async writeTxRow(via: { query(sql: string, params: unknown[]): Promise<unknown> }, workflowId: string, seq: number, lid: string) {
    await via.query(this.txRowSql, [workflowId, seq, lid, this.engineId]);
  }

  /** Appends one body run; returns the ledger row id. */
  async append(e: LedgerEntry): Promise<string> {
    const res = await this.pool.query<{ id: string }>(this.insertSql, [
      e.workflowId,
      e.seq,
      e.step,
      e.attempt,
      this.engineId,
      process.pid,
      e.bodyStartedMs,
      e.stepStartedMs,
      e.progressFrom ?? null,
    ]);
    return res.rows[0].id;
  }

  /**
   * End-of-body mark: the body returned at `finishedMs` (this process's clock), its ctx.signal
   * aborted or not. Written in the background (retried for 30 s while the database is away), so
   * the mark never changes what the body does; a body whose mark is lost (SIGKILL) just counts as
   * not finished.
   */
  finish(id: string, finishedMs: number, aborted: boolean): void {
    const deadline = Date.now() + 30_000;
    const write = async (): Promise<void> => {
      for (let wait = 100; ; wait = Math.min(wait * 2, 1000)) {
        try {
          await this.pool.query(this.finishSql, [id, finishedMs, aborted]);
          return;
        } catch {
          if (Date.now() + wait > deadline) return;
          await new Promise((r) => setTimeout(r, wait));
        }
      }
    };
    const p = write();
    this.marks.add(p);
    void p.finally(() => this.marks.delete(p));
  }

  /** Waits (at most `ms`) for the end-of-body marks still being written: before a graceful exit. */
  async flush(ms: number): Promise<number> {
    let t: NodeJS.Timeout | undefined;
    await Promise.race([Promise.all([...this.marks]), new Promise((r) => (t = setTimeout(r, ms)))]);
    clearTimeout(t);
    return this.marks.size;
  }

  async close(): Promise<void> {
    await this.pool.end().catch(() => undefined);
  }
}
