// The lone advance (one command, at most one operation, parts among ops, fence and release) is a
// second text of the general advance statement's compare-and-swap. Each command below runs on two
// identical workflows, one through each text; the outcome and every row either writes (the
// workflow, its operation, its claim) must be the same, committed or refused.
import pg from 'pg';
import { useTestEngines } from '../../../../test/support/engine.js';
import { advanceOutcomes, advanceParams, advanceSql, type AdvanceRow } from './repositories/workflow-advance.js';
import { loneAdvanceSql } from './repositories/workflow-advance-lone.js';
import type { AdvanceCommand } from './types.js';
import { isLoneRecord, loneAdvanceParams, shapeKeyOf, shapeOf } from './repositories/advance-shapes.js';

const ENGINE = 'engine-a';
const held = { engineId: ENGINE, epoch: '4' };
const op = (over: Record<string, unknown> = {}) => ({
  seq: 2,
  kind: 'step' as const,
  name: 'c',
  status: 'completed' as const,
  result: { n: 3 },
  ...over,
});

/** A fenced terminal commit with its last step's record and an output. */
const terminal: Omit<AdvanceCommand, 'workflowId'> = {
  expectedVersion: 3,
  operations: [op()],
  status: 'completed',
  output: { value: 'done' },
  completed: true,
  fence: held,
};

/** Commands as the engine sends them; `id` is replaced per copy. Each names why it is here. */
const cases: Record<string, Omit<AdvanceCommand, 'workflowId'>> = {
  'step record, ownership none': { expectedVersion: 3, operations: [op({ startedAt: '2026-12-05T10:00:00.123Z', event: 2 })] },
  'step record, fenced': { expectedVersion: 3, operations: [op()], fence: held },
  'step record with a null result, 3 attempts': { expectedVersion: 3, operations: [op({ result: null, attempts: 3 })], fence: held },
  'failed step, its error': {
    expectedVersion: 3,
    operations: [op({ status: 'failed', result: undefined, error: { name: 'Boom', message: 'no' }, attempts: 2 })],
    fence: held,
  },
  'terminal: output, release': { ...terminal, release: true },
  'terminal, fenced, no release: the end clears the fence, the claim row stays (decision 0011)': terminal,
  'terminal with a null output and no operation': {
    expectedVersion: 3,
    status: 'completed',
    output: { value: null },
    completed: true,
    fence: held,
    release: true,
  },
  'terminal: failed with its error, ownership none': {
    expectedVersion: 3,
    operations: [op({ status: 'failed', error: { message: 'x' } })],
    status: 'failed',
    error: { value: { name: 'Error', message: 'x' } },
    completed: true,
  },
  'refused: the version moved': { expectedVersion: 2, operations: [op()], fence: held },
  'refused: a stale fence': { expectedVersion: 3, operations: [op()], fence: { engineId: ENGINE, epoch: '3' } },
  'refused: a stale fence on a release': {
    expectedVersion: 3,
    status: 'completed',
    output: { value: 1 },
    completed: true,
    fence: { engineId: ENGINE, epoch: '3' },
    release: true,
  },
  'release by a fence whose claim row names another holder (rows left as they are)': {
    expectedVersion: 3,
    status: 'completed',
    completed: true,
    fence: { engineId: 'engine-b', epoch: '4' },
    release: true,
  },
};

describe('lone advance: the same outcome and rows as the general statement (real PostgreSQL)', () => {
  const env = useTestEngines();
  let db: pg.Client;

  beforeAll(async () => {
    const engine = await env.pool.create({ ownership: 'workflow-lease' });
    await engine.bootstrap();
    await engine.dispose();
    db = new pg.Client({ connectionString: env.tdb.url });
    await db.connect();
  });

  afterAll(async () => db?.end());

  /** A running workflow at version 3 with two operations, held by engine-a at epoch 4. */
  async function seed(id: string): Promise<void> {
    await db.query(
      `INSERT INTO weft.weft_workflows (id, type, status, input, version, fence_epoch) VALUES ($1, 'noop', 'running', '{"n": 1}', 3, 4)`,
      [id],
    );
    await db.query(
      `INSERT INTO weft.weft_operations (workflow_id, seq, kind, name, status, result) SELECT $1, s, 'step', 'a', 'completed', '1' FROM generate_series(0, 1) s`,
      [id],
    );
    await db.query(
      `INSERT INTO weft.weft_workflow_claims (workflow_id, epoch, engine_id, expires_at, claimed_at) VALUES ($1, 4, $2, now() + interval '1 hour', now())`,
      [id, ENGINE],
    );
  }

  /** What a commit wrote, with the id and the times it sets left out; SQL NULL told from a JSON null. */
  async function rowsOf(id: string) {
    const wf = await db.query(
      `SELECT status, output, error, output IS NULL AS no_output, error IS NULL AS no_error, completed_at IS NOT NULL AS completed, version, fence_epoch, updated_at > created_at AS touched
       FROM weft.weft_workflows WHERE id = $1`,
      [id],
    );
    const ops = await db.query(
      `SELECT seq, kind, name, status, result, error, result IS NULL AS no_result, error IS NULL AS no_error, attempts, started_at, event FROM weft.weft_operations WHERE workflow_id = $1 ORDER BY seq`,
      [id],
    );
    const claim = await db.query(
      `SELECT epoch, engine_id, expires_at IS NULL AS no_expiry, claimed_at IS NULL AS unclaimed, version FROM weft.weft_workflow_claims WHERE workflow_id = $1`,
      [id],
    );
    return { workflow: wf.rows[0], operations: ops.rows, claim: claim.rows[0] };
  }

  it.each(Object.keys(cases))('%s', async (name) => {
    const i = Object.keys(cases).indexOf(name);
    const [viaLone, viaGeneral] = [`lone-${i}`, `general-${i}`];
    await seed(viaLone);
    await seed(viaGeneral);
    const lone: AdvanceCommand = { ...cases[name], workflowId: viaLone };
    const general: AdvanceCommand = { ...cases[name], workflowId: viaGeneral };
    expect(isLoneRecord([lone], shapeKeyOf(lone))).toBe(true);

    const loneRows = (await db.query<AdvanceRow>(loneAdvanceSql('weft', shapeOf(lone)), loneAdvanceParams(lone, shapeKeyOf(lone)))).rows;
    const generalRows = (await db.query<AdvanceRow>(advanceSql('weft', shapeOf(general), true), advanceParams([general]))).rows;
    const [a] = advanceOutcomes([lone], loneRows);
    const [b] = advanceOutcomes([general], generalRows);
    expect({ ...a, workflowId: 'x' }).toEqual({ ...b, workflowId: 'x' });
    expect(await rowsOf(viaLone)).toEqual(await rowsOf(viaGeneral));
    // The cases are not vacuous: the committed ones change the rows, the refused ones do not.
    const committed = a.ok;
    const after = await rowsOf(viaLone);
    expect(after.workflow.version).toBe(committed ? 4 : 3);
    // A committed end leaves nothing fenced, whether or not it released the claim row.
    if (committed && cases[name].completed && cases[name].fence) expect(after.workflow.fence_epoch).toBeNull();
  });

  it('takes only what it can write: one command, at most one operation, no part beyond ops, fence and release', () => {
    const base: AdvanceCommand = { workflowId: 'w', expectedVersion: 1, operations: [op()], fence: held };
    const lone = (cs: AdvanceCommand[]) =>
      isLoneRecord(
        cs,
        cs.reduce((k, c) => k | shapeKeyOf(c), 0),
      );
    expect(lone([base])).toBe(true);
    expect(lone([base, { ...base, workflowId: 'v' }])).toBe(false);
    expect(lone([{ ...base, operations: [op(), op({ seq: 3 })] }])).toBe(false);
    expect(lone([{ ...base, timers: [{ kind: 'sleep', seq: 3, delayMs: 10 }] }])).toBe(false);
    expect(lone([{ ...base, clearTimers: true }])).toBe(false);
    expect(lone([{ ...base, messages: [{ workflowId: 'p', kind: 'child', name: 'w', payload: null }] }])).toBe(false);
    expect(lone([{ ...base, consume: [{ id: '1', seq: 3 }] }])).toBe(false);
    expect(lone([{ ...base, rotate: true }])).toBe(false);
    expect(lone([{ ...base, leaseFence: held }])).toBe(false);
    expect(lone([{ ...base, continueAsNew: { input: null, workflowVersion: null } }])).toBe(false);
    expect(lone([{ ...base, traceContext: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' }])).toBe(false);
  });
});
