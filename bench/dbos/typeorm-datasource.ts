// A TypeORM data source for DBOS Transact 5.3, written here against the SDK's data source API
// (@dbos-inc/dbos-sdk/datasource): DBOS's own @dbos-inc/typeorm-datasource is not in the npm
// registry this machine reaches (docs/performance.md). It follows the protocol that API documents
// for its data sources: look the step's checkpoint up first (a replay returns it); otherwise run
// the function in a TypeORM transaction that also inserts the checkpoint into
// dbos.transaction_completion (a conflict means a concurrent execution recorded it: roll back and
// replay) and asks the system database whether this execution still owns the workflow
// (assertStillOwnsWorkflow) before COMMIT; serialization failures are tried again; an error is
// recorded as the step's outcome. On the workflow's completion DBOS deletes its checkpoints.
import { DBOS } from '@dbos-inc/dbos-sdk';
import {
  DBOSStepAlreadyRecordedError,
  assertStillOwnsWorkflow,
  isPGKeyConflictError,
  isPGRetriableTransactionError,
  migrateDataSourcePG,
  registerDataSource,
  registerTransaction,
  replayRecordedStep,
  type DataSourceTransactionHandler,
  type PGTransactionConfig,
} from '@dbos-inc/dbos-sdk/datasource';
import { AsyncLocalStorage } from 'node:async_hooks';
import { SuperJSON } from 'superjson';
import type { DataSource, EntityManager } from 'typeorm';

const current = new AsyncLocalStorage<EntityManager>();
const SCHEMA = 'dbos';

class Handler implements DataSourceTransactionHandler {
  constructor(
    readonly name: string,
    private readonly ds: DataSource,
  ) {}

  async initialize(): Promise<void> {
    const runner = this.ds.createQueryRunner();
    await runner.connect();
    try {
      await runner.startTransaction();
      await migrateDataSourcePG((sql) => runner.query(sql) as Promise<Record<string, unknown>[]>, SCHEMA);
      await runner.commitTransaction();
    } catch (err) {
      if (runner.isTransactionActive) await runner.rollbackTransaction();
      throw err;
    } finally {
      await runner.release();
    }
  }

  async destroy(): Promise<void> {}

  async deleteCheckpoints(workflowID: string, startStep: number, beforeCommit?: () => Promise<void>): Promise<void> {
    await this.ds.transaction(async (em) => {
      await em.query(`DELETE FROM "${SCHEMA}".transaction_completion WHERE workflow_id = $1 AND function_num >= $2`, [
        workflowID,
        startStep,
      ]);
      await beforeCommit?.();
    });
  }

  private async recorded(workflowID: string, step: number): Promise<{ output: string | null; error: string | null } | undefined> {
    const rows = (await this.ds.query(
      `SELECT output, error FROM "${SCHEMA}".transaction_completion WHERE workflow_id = $1 AND function_num = $2`,
      [workflowID, step],
    )) as Array<{ output: string | null; error: string | null }>;
    return rows[0];
  }

  private async record(via: EntityManager | DataSource, workflowID: string, step: number, column: 'output' | 'error', value: string) {
    const rows = (await via.query(
      `INSERT INTO "${SCHEMA}".transaction_completion (workflow_id, function_num, ${column}) VALUES ($1, $2, $3)
       ON CONFLICT (workflow_id, function_num) DO NOTHING RETURNING workflow_id`,
      [workflowID, step, value],
    )) as unknown[];
    if (rows.length === 0) throw new DBOSStepAlreadyRecordedError(workflowID, step);
  }

  async invokeTransactionFunction<This, Args extends unknown[], Return>(
    config: PGTransactionConfig | undefined,
    target: This,
    func: (this: This, ...args: Args) => Promise<Return>,
    ...args: Args
  ): Promise<Return> {
    const workflowID = DBOS.workflowID;
    const step = DBOS.stepID;
    const save = workflowID !== undefined && step !== undefined && !config?.readOnly;
    for (let wait = 1; ; wait = Math.min(wait * 1.5, 2000)) {
      const before = save ? await this.recorded(workflowID, step) : undefined;
      if (before) return replayRecordedStep<Return>(before);
      try {
        return await this.ds.transaction(config?.isolationLevel ?? 'READ COMMITTED', async (em) => {
          const result = await current.run(em, () => func.call(target, ...args));
          if (save) {
            await this.record(em, workflowID, step, 'output', SuperJSON.stringify(result));
            await assertStillOwnsWorkflow(workflowID);
          }
          return result;
        });
      } catch (err) {
        if (save && err instanceof DBOSStepAlreadyRecordedError)
          return replayRecordedStep<Return>((await this.recorded(workflowID, step))!);
        if (isPGRetriableTransactionError(err)) {
          await new Promise((resolve) => setTimeout(resolve, wait));
          continue;
        }
        if (save && !isPGKeyConflictError(err)) await this.record(this.ds, workflowID, step, 'error', SuperJSON.stringify(err));
        throw err;
      }
    }
  }
}

/** The TypeORM data source: `registerTransaction` wraps a function; inside it, `entityManager` is the transaction's. */
export class TypeOrmDbosDataSource {
  constructor(
    readonly name: string,
    ds: DataSource,
  ) {
    registerDataSource(new Handler(name, ds));
  }

  get entityManager(): EntityManager {
    const em = current.getStore();
    if (!em) throw new Error('TypeOrmDbosDataSource.entityManager outside of a DBOS transaction');
    return em;
  }

  registerTransaction<This, Args extends unknown[], Return>(
    func: (this: This, ...args: Args) => Promise<Return>,
    config?: PGTransactionConfig & { name?: string },
  ): (this: This, ...args: Args) => Promise<Return> {
    return registerTransaction(this.name, func, config);
  }
}
