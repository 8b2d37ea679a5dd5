import pg from 'pg';
import { useTestEngines, waitFor } from '../../../../test/support/engine.js';
import type { WorkflowContext } from '../common/types.js';
import { currentStep } from './als.js';
import { Step } from '../nest/decorators/step.decorator.js';
import type { EntityManager } from 'typeorm';
import type { WeftEngine } from './engine.js';

/** Every transactional body writes one row here: exactly one per (workflow, step) must survive. */
const APP_TABLE = `CREATE TABLE IF NOT EXISTS app_rows (workflow_id text NOT NULL, step text NOT NULL, attempt int NOT NULL, engine text)`;
const bodies: Record<string, number> = {};
const bump = (k: string) => (bodies[k] = (bodies[k] ?? 0) + 1);
const gates = new Map<string, () => void>();
const hooks = new Map<string, () => Promise<void>>();
/** Which engine a gated body runs on (the test switches it before the takeover). */
const currentEngine = new Map<string, string>();

const insertRow = (m: { query(sql: string, p: unknown[]): Promise<unknown> }, id: string, step: string, attempt: number, engine = '') =>
  m.query('INSERT INTO app_rows (workflow_id, step, attempt, engine) VALUES ($1, $2, $3, $4)', [id, step, attempt, engine]);

/** A body that writes, then fails its first attempt. */
class FailsOnce {
  async run(ctx: WorkflowContext) {
    const a = await ctx.transaction(
      'write',
      async (m, { attempt, idempotencyKey }) => {
        bump(`${ctx.workflowId}:write`);
        await insertRow(m, ctx.workflowId, 'write', attempt);
        if (attempt === 1) throw new Error('first attempt fails after its write');
        return { attempt, idempotencyKey };
      },
      { retry: { initialInterval: 10 } },
    );
    const b = await ctx.step('after', () => 'plain');
    return { a, b };
  }
}

/** A serializable body that a concurrent writer makes fail with 40001 once. */
class Serializable {
  async run(ctx: WorkflowContext) {
    return ctx.transaction(
      'count',
      async (m, { attempt }) => {
        const n = bump(`${ctx.workflowId}:count`);
        await insertRow(m, ctx.workflowId, 'count', attempt);
        await m.query('SELECT v FROM counter WHERE id = 1'); // the snapshot is taken here
        if (n === 1) await hooks.get(ctx.workflowId)!(); // a concurrent committed update of the row
        await m.query('UPDATE counter SET v = v + 1 WHERE id = 1');
        return { attempt, bodies: n };
      },
      { isolation: 'serializable' },
    );
  }
}

/** A body that locks row 1 then row 2 of `locks`; a helper the test holds makes its first attempt deadlock (40P01). */
class Deadlocks {
  async run(ctx: WorkflowContext) {
    return ctx.transaction('both', async (m, { attempt }) => {
      const n = bump(`${ctx.workflowId}:both`);
      await insertRow(m, ctx.workflowId, 'both', attempt);
      await m.query('UPDATE locks SET v = v + 1 WHERE id = 1');
      if (n === 1) await hooks.get(ctx.workflowId)!(); // the helper holds row 2 and waits for row 1
      await m.query('UPDATE locks SET v = v + 1 WHERE id = 2');
      return { attempt, bodies: n };
    });
  }
}

/** A transactional body that waits for the test after its write. */
class GatedTx {
  async run(ctx: WorkflowContext) {
    await ctx.step('first', () => 1);
    const got = await ctx.transaction('gated', async (m, { signal }) => {
      await insertRow(m, ctx.workflowId, 'gated', 0, currentEngine.get(ctx.workflowId) ?? '');
      bump(`${ctx.workflowId}:gated`);
      return new Promise<string>((resolve, reject) => {
        gates.set(ctx.workflowId, () => resolve('written'));
        signal.addEventListener('abort', () => reject(new Error('aborted')));
      });
    });
    return got;
  }
}

/** ctx inside a transactional body is refused. */
class NestedCtx {
  async run(ctx: WorkflowContext) {
    return ctx.transaction('nested', async () => ctx.now().getTime(), { retry: { maxAttempts: 1 } });
  }
}

/** A body that hangs past its step's timeout: its signal aborts, its write rolls back, the step fails. */
class TimesOut {
  async run(ctx: WorkflowContext) {
    return ctx
      .transaction(
        'slow',
        async (m, { signal }) => {
          await insertRow(m, ctx.workflowId, 'slow', 1);
          await new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason as Error)));
        },
        { timeout: '300ms', retry: { maxAttempts: 1 } },
      )
      .then(
        () => 'no timeout',
        () => 'timed out',
      );
  }
}

/** A transactional step and a plain one at once: the plain step's record rides in the transaction's commit or its own. */
class Concurrent {
  async run(ctx: WorkflowContext) {
    const [a, b] = await Promise.all([
      ctx.transaction('tx', async (m) => {
        await insertRow(m, ctx.workflowId, 'tx', 1);
        return 'tx';
      }),
      ctx.step('plain', () => 'plain'),
    ]);
    const c = await ctx.transaction('tx2', async (m) => {
      await insertRow(m, ctx.workflowId, 'tx2', 1);
      return 'tx2';
    });
    return [a, b, c];
  }
}

/** One transactional step, then the end: the end commits in the step's own transaction (decision 0043). */
class OneTx {
  async run(ctx: WorkflowContext) {
    return ctx.transaction('only', async (m) => {
      await insertRow(m, ctx.workflowId, 'only', 1);
      return 'done';
    });
  }
}

/**
 * The first transaction's COMMIT fails (a deferred foreign key whose parent row is missing) after
 * the code went on past the step: the run is re-read, the body runs again and commits once; the
 * plain step after it runs only once the record is durable.
 */
class FailsAtCommit {
  async run(ctx: WorkflowContext) {
    const got = await ctx.transaction('child', async (m) => {
      const n = bump(`${ctx.workflowId}:child`);
      if (n > 1) await m.query('INSERT INTO parents (id) VALUES ($1)', [ctx.workflowId]);
      await m.query('INSERT INTO children (parent_id) VALUES ($1)', [ctx.workflowId]);
      await insertRow(m, ctx.workflowId, 'child', n);
      return n;
    });
    const after = await ctx.step('after', () => bump(`${ctx.workflowId}:after`));
    return { got, after };
  }
}

/** A provider whose method is a transactional step: it reaches the manager through currentStep(). */
class OrdersService {
  @Step({ transaction: true, name: 'orders.save' })
  async save(workflowId: string): Promise<number> {
    const step = currentStep()!;
    await insertRow(step.manager!, workflowId, 'orders.save', step.attempt);
    return step.attempt;
  }
}
const orders = new OrdersService();
class UsesProvider {
  async run(ctx: WorkflowContext) {
    return orders.save(ctx.workflowId);
  }
}

/** The pg client a body ran on, to look at it once the step is over. */
const clients = new Map<string, { pipeline: boolean; query: unknown }>();
const clientOf = (m: EntityManager) =>
  (m.queryRunner as unknown as { databaseConnection: { pipeline: boolean; query: unknown } }).databaseConnection;

/** A body that sends nothing, one whose first statement opens a savepoint, one that reads its isolation. */
class Shapes {
  async run(ctx: WorkflowContext) {
    const empty = await ctx.transaction('empty', async (m) => {
      clients.set(`${ctx.workflowId}:empty`, clientOf(m));
      return 'nothing sent';
    });
    const nested = await ctx.transaction('nested', async (m) => {
      await m
        .transaction(async (inner) => {
          await insertRow(inner, ctx.workflowId, 'nested-inner', 1);
          throw new Error('rolls back to its savepoint');
        })
        .catch(() => undefined);
      await insertRow(m, ctx.workflowId, 'nested', 1);
      clients.set(`${ctx.workflowId}:nested`, clientOf(m));
      return 'outer kept';
    });
    const isolation = await ctx.transaction(
      'isolation',
      async (m) => ((await m.query('SHOW transaction_isolation')) as Array<{ transaction_isolation: string }>)[0].transaction_isolation,
      { isolation: 'serializable' },
    );
    return { empty, nested, isolation };
  }
}

const rowsOf = async (env: ReturnType<typeof useTestEngines>, id: string) =>
  env.tdb.query<{ step: string; attempt: number; engine: string }>(
    'SELECT step, attempt, engine FROM app_rows WHERE workflow_id = $1 ORDER BY step',
    [id],
  );

describe('transactional steps (real PostgreSQL)', () => {
  const env = useTestEngines();
  const register = (e: WeftEngine) =>
    e
      .register('fails-once', FailsOnce)
      .register('serializable', Serializable)
      .register('deadlocks', Deadlocks)
      .register('gated-tx', GatedTx)
      .register('nested-ctx', NestedCtx)
      .register('concurrent', Concurrent)
      .register('uses-provider', UsesProvider)
      .register('shapes', Shapes)
      .register('one-tx', OneTx)
      .register('fails-at-commit', FailsAtCommit)
      .register('times-out', TimesOut);

  beforeAll(async () => {
    await env.tdb.query(APP_TABLE);
    await env.tdb.query('CREATE TABLE IF NOT EXISTS counter (id int PRIMARY KEY, v int NOT NULL)');
    await env.tdb.query('INSERT INTO counter VALUES (1, 0) ON CONFLICT DO NOTHING');
    await env.tdb.query('CREATE TABLE IF NOT EXISTS locks (id int PRIMARY KEY, v int NOT NULL)');
    await env.tdb.query('INSERT INTO locks VALUES (1, 0), (2, 0) ON CONFLICT DO NOTHING');
    await env.tdb.query('CREATE TABLE IF NOT EXISTS parents (id text PRIMARY KEY)');
    await env.tdb.query(
      'CREATE TABLE IF NOT EXISTS children (parent_id text NOT NULL REFERENCES parents (id) DEFERRABLE INITIALLY DEFERRED)',
    );
  });

  it("the code goes on past a transactional step before it commits: the workflow's end commits in the step's transaction", async () => {
    const e = await env.pool.create({}, register);
    const h = await e.start('one-tx', {});
    await expect(h.result({ timeout: '10s' })).resolves.toBe('done');
    // The row's last writer is the transaction that wrote the application row (no commit of its own for the end).
    const [same] = await env.tdb.query<{ same: boolean; status: string }>(
      `SELECT w.xmin::text = a.xmin::text AS same, w.status FROM weft.weft_workflows w, app_rows a WHERE w.id = $1 AND a.workflow_id = w.id`,
      [h.workflowId],
    );
    expect(same).toEqual({ same: true, status: 'completed' });
  });

  it("a step timeout aborts the body's signal and rolls its write back; the step fails", async () => {
    const e = await env.pool.create({}, register);
    const h = await e.start('times-out', {});
    await expect(h.result({ timeout: '10s' })).resolves.toBe('timed out');
    expect(await rowsOf(env, h.workflowId)).toEqual([]);
    const [op] = (await e.describe(h.workflowId)).history;
    expect(op).toMatchObject({ name: 'slow', status: 'failed' });
    expect(JSON.stringify(op.error)).toContain('StepTimeoutError');
  });

  it("the DataSource's subscribers hear a transactional step's transaction start and commit, as TypeORM's own", async () => {
    const e = await env.pool.create({}, register);
    const heard: string[] = [];
    const dataSource = (e as unknown as { database: { dataSource: { subscribers: object[] } } }).database.dataSource;
    dataSource.subscribers.push({
      beforeTransactionStart: () => void heard.push('beforeStart'),
      afterTransactionStart: () => void heard.push('afterStart'),
      beforeTransactionCommit: () => void heard.push('beforeCommit'),
      afterTransactionCommit: () => void heard.push('afterCommit'),
    });
    const h = await e.start('one-tx', {});
    await expect(h.result({ timeout: '10s' })).resolves.toBe('done');
    expect(heard).toEqual(['beforeStart', 'afterStart', 'beforeCommit', 'afterCommit']);
  });

  it('a COMMIT that fails after the code went on: the run is re-read, the body commits once, nothing after the step ran early', async () => {
    const e = await env.pool.create({}, register);
    const h = await e.start('fails-at-commit', {});
    await expect(h.result({ timeout: '15s' })).resolves.toEqual({ got: 2, after: 1 });
    expect(bodies[`${h.workflowId}:child`]).toBe(2);
    expect(bodies[`${h.workflowId}:after`]).toBe(1);
    expect(await rowsOf(env, h.workflowId)).toEqual([{ step: 'child', attempt: 2, engine: '' }]);
    const [{ n }] = await env.tdb.query<{ n: number }>('SELECT count(*)::int AS n FROM children WHERE parent_id = $1', [h.workflowId]);
    expect(n).toBe(1);
  });

  it('a body error on the first attempt rolls its write back: one row, the second attempt recorded', async () => {
    const e = await env.pool.create({}, register);
    const h = await e.start('fails-once', {});
    const out = (await h.result({ timeout: '10s' })) as { a: { attempt: number; idempotencyKey: string } };
    expect(out.a).toEqual({ attempt: 2, idempotencyKey: `${h.workflowId}:0` });
    expect(bodies[`${h.workflowId}:write`]).toBe(2);
    expect(await rowsOf(env, h.workflowId)).toEqual([{ step: 'write', attempt: 2, engine: '' }]);
    const history = (await e.describe(h.workflowId)).history;
    expect(history.find((o) => o.name === 'write')).toMatchObject({ kind: 'step', status: 'completed', attempts: 2 });
  });

  it('a serialization failure (40001) rolls back and runs again without counting as an attempt', async () => {
    const e = await env.pool.create({}, register);
    const other = new pg.Client({ connectionString: env.tdb.url });
    await other.connect();
    try {
      const id = 'serializable-1';
      hooks.set(id, async () => void (await other.query('UPDATE counter SET v = v + 100 WHERE id = 1')));
      const before = (await env.tdb.query<{ v: number }>('SELECT v FROM counter WHERE id = 1'))[0].v;
      const h = await e.start('serializable', {}, { workflowId: id });
      await expect(h.result({ timeout: '10s' })).resolves.toEqual({ attempt: 1, bodies: 2 });
      expect(await rowsOf(env, id)).toEqual([{ step: 'count', attempt: 1, engine: '' }]);
      expect((await env.tdb.query<{ v: number }>('SELECT v FROM counter WHERE id = 1'))[0].v).toBe(before + 101);
      expect((await e.describe(id)).history[0]).toMatchObject({ status: 'completed', attempts: 1 });
    } finally {
      await other.end();
    }
  });

  it('a deadlock (40P01) against another connection rolls back and runs again without counting as an attempt', async () => {
    const e = await env.pool.create({}, register);
    const helper = new pg.Client({ connectionString: env.tdb.url });
    await helper.connect();
    try {
      // The body must be the deadlock's victim: the helper looks for the cycle only after 30 s.
      await helper.query(`SET deadlock_timeout = '30s'`);
      const [{ pid }] = (await helper.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows;
      const id = 'deadlocks-1';
      let helperDone: Promise<unknown> | undefined;
      hooks.set(id, async () => {
        await helper.query('BEGIN');
        await helper.query('UPDATE locks SET v = v + 100 WHERE id = 2');
        // Row 1 is the body's until its attempt ends; the helper then commits both.
        helperDone = helper.query('UPDATE locks SET v = v + 100 WHERE id = 1').then(() => helper.query('COMMIT'));
        const waiting = async () =>
          (await env.tdb.query<{ w: string | null }>('SELECT wait_event_type AS w FROM pg_stat_activity WHERE pid = $1', [pid]))[0]?.w ===
          'Lock';
        await waitFor(waiting, 'the helper to wait for row 1');
      });
      const h = await e.start('deadlocks', {}, { workflowId: id });
      await expect(h.result({ timeout: '15s' })).resolves.toEqual({ attempt: 1, bodies: 2 });
      await helperDone;
      expect(await rowsOf(env, id)).toEqual([{ step: 'both', attempt: 1, engine: '' }]);
      expect(await env.tdb.query('SELECT id, v FROM locks ORDER BY id')).toEqual([
        { id: 1, v: 101 },
        { id: 2, v: 101 },
      ]);
      expect((await e.describe(id)).history[0]).toMatchObject({ status: 'completed', attempts: 1 });
    } finally {
      await helper.end();
    }
  });

  it('a ctx operation inside a transactional body is refused with a typed error', async () => {
    const e = await env.pool.create({}, register);
    const h = await e.start('nested-ctx', {});
    const err = await h.result({ timeout: '10s' }).catch((x: unknown) => x);
    expect((err as { cause?: { cause?: { code?: string } } }).cause?.cause?.code).toBe('WEFT_OPERATION_IN_TRANSACTION');
  });

  it('a transactional step beside a plain one: both recorded, every row once', async () => {
    const e = await env.pool.create({}, register);
    const hs = await Promise.all(Array.from({ length: 8 }, () => e.start('concurrent', {})));
    for (const h of hs) {
      await expect(h.result({ timeout: '10s' })).resolves.toEqual(['tx', 'plain', 'tx2']);
      expect((await rowsOf(env, h.workflowId)).map((r) => r.step)).toEqual(['tx', 'tx2']);
      expect((await e.describe(h.workflowId)).history.map((o) => o.name).sort()).toEqual(['plain', 'tx', 'tx2']);
    }
  });

  it('@Step({ transaction: true }) on a provider method: the manager comes from currentStep()', async () => {
    const e = await env.pool.create({}, register);
    const h = await e.start('uses-provider', {});
    await expect(h.result({ timeout: '10s' })).resolves.toBe(1);
    expect(await rowsOf(env, h.workflowId)).toEqual([{ step: 'orders.save', attempt: 1, engine: '' }]);
    expect((await e.describe(h.workflowId)).history[0]).toMatchObject({ kind: 'step', name: 'orders.save', status: 'completed' });
  });

  it("a deposed owner's transaction cannot commit: its write rolls back and the new owner's is the one row", async () => {
    const WL = { ownership: 'workflow-lease' as const, workflowClaimTtl: 900, workflowClaimRenewInterval: 300 };
    // A stalls (manual: no renewals, so it never learns it lost the claim); B takes over.
    const lost: Error[] = [];
    const a = await env.pool.create({ ...WL, engineId: 'TA', backgroundTasks: 'manual', onWarning: (w) => lost.push(w) }, register);
    await a.bootstrap();
    const id = 'deposed-1';
    currentEngine.set(id, 'A');
    const h = await a.start('gated-tx', {}, { workflowId: id });
    await waitFor(() => gates.has(id), 'the body on A wrote and waits');
    const releaseA = gates.get(id)!;
    currentEngine.set(id, 'B');
    const b = await env.pool.create({ ...WL, engineId: 'TB' }, register);
    await b.bootstrap();
    await waitFor(() => gates.get(id) !== releaseA, 'B runs the body again after its takeover', 10_000);
    gates.get(id)!(); // B commits first
    await expect(b.result(h.workflowId, { timeout: '10s' })).resolves.toBe('written');
    releaseA(); // A's late commit: its fence check fails inside its transaction
    await waitFor(() => lost.some((w) => w.name === 'WeftWorkflowClaimLostWarning'), "A's commit refused by the fence");
    expect(await rowsOf(env, id)).toEqual([{ step: 'gated', attempt: 0, engine: 'B' }]);
    expect((await b.describe(id)).history.map((o) => o.name)).toEqual(['first', 'gated']);
  });

  it('a body that sends nothing, one that opens a savepoint first, an isolation level: BEGIN rides with the first statement', async () => {
    const e = await env.pool.create({}, register);
    const h = await e.start('shapes', {});
    await expect(h.result({ timeout: '10s' })).resolves.toEqual({ empty: 'nothing sent', nested: 'outer kept', isolation: 'serializable' });
    expect(await rowsOf(env, h.workflowId)).toEqual([{ step: 'nested', attempt: 1, engine: '' }]);
    expect((await e.describe(h.workflowId)).history.map((o) => [o.name, o.status])).toEqual([
      ['empty', 'completed'],
      ['nested', 'completed'],
      ['isolation', 'completed'],
    ]);
    // The pooled connections went back as they came: no query method of the transaction's, out of pipeline mode.
    for (const k of ['empty', 'nested']) {
      const client = clients.get(`${h.workflowId}:${k}`)!;
      expect(Object.prototype.hasOwnProperty.call(client, 'query')).toBe(false);
      expect(client.pipeline).toBe(false);
    }
  });
});
