// A transactional step's commit (WorkflowRepository.advanceAndCommit, docs/decisions/0047): the
// step's record as the lone advance that fails when refused, with the body's write, in one
// transaction. Refused by the version or by the fence, nothing commits (the body's write neither)
// and the outcome says which; a command that does not fit the raising form keeps the check.
import { useTestStore } from '../../../../test/support/store.js';
import type { AdvanceCommand } from './types.js';

const ENGINE = 'engine-a';
const op = (seq: number) => ({ seq, kind: 'step' as const, name: 's', status: 'completed' as const, result: { n: seq } });

describe('advanceAndCommit: the record, its check and COMMIT (real PostgreSQL)', () => {
  const env = useTestStore({ poolSize: 4 });

  beforeAll(async () => {
    await env.db.sql.query('CREATE TABLE app_rows (workflow_id text NOT NULL, seq int NOT NULL)');
  });

  /** A running workflow at version 3, fence epoch 4, with its step 0 recorded. */
  async function seed(id: string): Promise<void> {
    await env.db.sql.query(
      `INSERT INTO weft.weft_workflows (id, type, status, input, version, fence_epoch) VALUES ($1, 'noop', 'running', '{}', 3, 4)`,
      [id],
    );
    await env.db.sql.query(
      `INSERT INTO weft.weft_operations (workflow_id, seq, kind, name, status, result) VALUES ($1, 0, 'step', 'a', 'completed', '1')`,
      [id],
    );
  }

  /** The body's write, then the commit of `command` (its record at seq 1). */
  async function commit(command: AdvanceCommand) {
    const tx = await env.db.sql.beginAppTransaction();
    await tx.manager.query('INSERT INTO app_rows (workflow_id, seq) VALUES ($1, $2)', [command.workflowId, 1]);
    let statements = 0;
    const commitAfter = tx.commitAfter.bind(tx);
    tx.commitAfter = (sts) => ((statements = sts.length), commitAfter(sts));
    const outcome = await env.store.workflows.advanceAndCommit(tx, command, 1);
    const [{ rows, ops, version }] = await env.db.sql.query<{ rows: number; ops: number; version: number }>(
      `SELECT (SELECT count(*)::int FROM app_rows WHERE workflow_id = $1) AS rows,
              (SELECT count(*)::int FROM weft.weft_operations WHERE workflow_id = $1) AS ops,
              (SELECT version FROM weft.weft_workflows WHERE id = $1) AS version`,
      [command.workflowId],
    );
    return { outcome, rows, ops, version, statements };
  }

  it('commits the write and the record together', async () => {
    await seed('ok');
    const r = await commit({ workflowId: 'ok', expectedVersion: 3, operations: [op(1)], fence: { engineId: ENGINE, epoch: '4' } });
    expect(r).toEqual({ outcome: { workflowId: 'ok', ok: true, version: 4 }, rows: 1, ops: 2, version: 4, statements: 1 });
  });

  it.each([
    ['the version moved, fenced', { expectedVersion: 2, fence: { engineId: ENGINE, epoch: '4' } }, 'version'],
    ['the version moved, ownership none', { expectedVersion: 2 }, 'version'],
    ['the fence moved', { expectedVersion: 3, fence: { engineId: ENGINE, epoch: '3' } }, 'fence'],
  ] as const)('refused (%s): nothing commits, and the outcome says why', async (name, over, reason) => {
    const id = `refused-${name}`;
    await seed(id);
    const r = await commit({ workflowId: id, operations: [op(1)], ...over });
    expect(r).toEqual({ outcome: { workflowId: id, ok: false, reason }, rows: 0, ops: 1, version: 3, statements: 1 });
  });

  it('the end riding with the record commits in the same statement; two records take the general form and its check', async () => {
    await seed('end');
    const end = await commit({
      workflowId: 'end',
      expectedVersion: 3,
      operations: [op(1)],
      status: 'completed',
      output: { value: 1 },
      completed: true,
    });
    expect(end).toMatchObject({ outcome: { ok: true }, rows: 1, ops: 2, statements: 1 });
    await seed('two');
    const two = await commit({ workflowId: 'two', expectedVersion: 3, operations: [op(1), op(2)] });
    expect(two).toMatchObject({ outcome: { ok: true }, rows: 1, ops: 3, statements: 2 });
    await seed('two-refused');
    const refused = await commit({ workflowId: 'two-refused', expectedVersion: 2, operations: [op(1), op(2)] });
    expect(refused).toEqual({
      outcome: { workflowId: 'two-refused', ok: false, reason: 'version' },
      rows: 0,
      ops: 1,
      version: 3,
      statements: 2,
    });
  });
});
