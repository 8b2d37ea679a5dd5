// Cached plans follow the tables' growth (docs/decisions/0009-plans-follow-table-growth.md).
//
// Every hot statement is a named prepared statement, and a pooled connection runs the generic
// plan PostgreSQL makes at its 6th use for as long as the connection lives, unless something
// invalidates it (ANALYZE, VACUUM, DDL). A plan made while a table was a few pages long reads
// it sequentially, which is the cheapest way to read a few pages and the costliest way to read
// a million rows; without autovacuum (or before its first ANALYZE) nothing replaces it. So the
// sizes of Weft's tables are watched, and each time one of them crosses a power of two, every
// connection discards its plans before its next statement: the next plans are made at the
// table's current size.
import type { SqlClient } from './sql-client.js';

/** The tables the hot path reads by key; their size decides between an index and a scan. */
export const WATCHED_TABLES = ['weft_workflows', 'weft_operations', 'weft_messages', 'weft_timers', 'weft_workflow_claims'];

/** Under 8 pages a table is one class; above 2^16 pages (512 MiB) plans no longer change with size. */
export function sizeClass(pages: number): number {
  if (pages < 8) return 0;
  return Math.min(Math.floor(Math.log2(pages)), 16) - 2;
}

const SIZES = `SELECT c.relname AS name, (pg_relation_size(c.oid) / current_setting('block_size')::int)::int AS pages
               FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
               WHERE n.nspname = $1 AND c.relname = ANY($2::text[]) AND c.relkind = 'r'`;

/** How often the background tick reads the sizes (one catalog statement): a young table doubles fast. */
const EVERY_MS = 2_000;

export class PlanFreshness {
  private readonly classes = new Map<string, number>();
  private lastCheck = 0;

  /** `db`: the client whose connections' plans (`db.plans`) follow the sizes. */
  constructor(
    private readonly db: SqlClient,
    private readonly schema: string,
  ) {}

  /** From the background tick: a check when one is due. */
  async maybeRefresh(now = Date.now()): Promise<boolean> {
    if (now - this.lastCheck < EVERY_MS) return false;
    return this.refresh(now);
  }

  /** Reads the sizes; true (and a new generation) when a table changed class since the last read. */
  async refresh(now = Date.now()): Promise<boolean> {
    this.lastCheck = now;
    const rows = await this.db.query<{ name: string; pages: number }>(SIZES, [this.schema, WATCHED_TABLES]);
    let changed = false;
    for (const { name, pages } of rows) {
      const cls = sizeClass(pages);
      const before = this.classes.get(name);
      if (before !== undefined && before !== cls) changed = true;
      this.classes.set(name, cls);
    }
    if (changed) this.db.plans.value++;
    return changed;
  }
}
