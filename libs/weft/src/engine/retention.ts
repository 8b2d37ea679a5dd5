// Retention: the maintenance pass that deletes ended workflows past their `retention` age, with
// their histories, in bounded batches. One engine at a time (a transaction-scoped advisory lock):
// the others skip the pass rather than queue behind it. Running workflows are never touched.
import type { WorkflowRepository } from '../storage/repositories/workflow.repository.js';
import type { SqlClient } from '../storage/sql-client.js';
import type { ResolvedEngineOptions } from './options.js';

/** Rows per delete statement: small enough that each batch's locks and WAL stay short. */
export const RETENTION_BATCH = 500;
/** Work per pass, so a backlog of a million rows is worked off across passes, beside the hot path. */
const PASS_BUDGET_MS = 1000;
/** How often an engine looks (its background tick is faster; retention need not be). */
const EVERY_MS = 10_000;

export interface RetentionDependencies {
  workflows: WorkflowRepository;
  sql: SqlClient;
  options: ResolvedEngineOptions;
}

export class Retention {
  private lastPassAt = 0;

  constructor(private readonly deps: RetentionDependencies) {}

  get enabled(): boolean {
    return this.deps.options.retention.length > 0;
  }

  /** From the background tick: a pass when one is due. */
  async maybeRun(): Promise<number> {
    if (!this.enabled || Date.now() - this.lastPassAt < EVERY_MS) return 0;
    return this.runPass();
  }

  /** Batches until none is full or the pass budget is spent; 0 when another engine holds the pass. */
  async runPass(): Promise<number> {
    if (!this.enabled) return 0;
    this.lastPassAt = Date.now();
    const until = Date.now() + PASS_BUDGET_MS;
    let total = 0;
    for (;;) {
      const n = await this.batch();
      if (n === null) return total;
      total += n;
      if (n > 0) this.deps.options.metrics.workflowsPurged?.(n);
      if (n < RETENTION_BATCH || Date.now() >= until) return total;
    }
  }

  /** One batch under the retention lock; null when another engine holds it. */
  private batch(): Promise<number | null> {
    return this.deps.sql.transaction(async (_client, via) => {
      return this.deps.workflows.purgeBatch(via, this.deps.options.retention, RETENTION_BATCH);
    });
  }
}
