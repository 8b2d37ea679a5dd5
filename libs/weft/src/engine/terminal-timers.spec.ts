// A workflow's end deletes its timer rows (an execution deadline, a sleep still pending) in the
// terminal commit. A run its start launched with no deadline that never waited with a timer has
// none, and its terminal commit leaves that part of the statement out (docs/performance.md).
import pg from 'pg';
import { useTestEngines } from '../../../../test/support/engine.js';
import type { WorkflowContext } from '../common/types.js';
import type { WeftEngine } from './engine.js';

class Plain {
  async run(ctx: WorkflowContext) {
    await ctx.step('a', () => 1);
    return ctx.step('b', () => 2);
  }
}

/** Ends while its sleep is still pending: that timer row must go with the end. */
class RacesASleep {
  async run(ctx: WorkflowContext) {
    return Promise.race([ctx.sleep('60s').then(() => 'slept'), ctx.step('a', () => 'stepped')]);
  }
}

describe('timer rows at the end of a workflow (real PostgreSQL)', () => {
  const env = useTestEngines({ disposeAfterEach: false });
  let engine: WeftEngine;
  const timerDeletes: string[] = [];

  beforeAll(async () => {
    engine = await env.pool.create({}, (e) => {
      e.register('plain', Plain);
      e.register('races', RacesASleep);
    });
    await engine.bootstrap();
  });

  /** Runs `fn`, noting the advance statements that delete timer rows (by the workflow ids they carry). */
  async function watchingTimerDeletes<T>(fn: () => Promise<T>): Promise<T> {
    const query = pg.Client.prototype.query;
    const spy = vi.spyOn(pg.Client.prototype, 'query').mockImplementation(function (this: pg.Client, ...args: unknown[]) {
      const c = args[0] as { text?: string; values?: unknown[] };
      if (typeof c?.text === 'string' && c.text.includes('del_timers AS')) timerDeletes.push(String(c.values?.[0]));
      return (query as (...a: unknown[]) => unknown).apply(this, args) as never;
    });
    try {
      return await fn();
    } finally {
      spy.mockRestore();
    }
  }

  const timerRows = async (id: string) =>
    (await env.tdb.query(`SELECT kind, seq FROM weft.weft_timers WHERE workflow_id = $1`, [id])).length;

  it('a run with no timers ends without a timer delete', async () => {
    const h = await watchingTimerDeletes(async () => {
      const h = await engine.start('plain', {});
      await h.result({ timeout: '10s' });
      return h;
    });
    expect(timerDeletes.filter((p) => p.includes(h.workflowId))).toEqual([]);
    expect(await h.describe()).toMatchObject({ status: 'completed' });
  });

  it('an execution deadline that did not fire is deleted with the end', async () => {
    const h = await watchingTimerDeletes(async () => {
      const h = await engine.start('plain', {}, { executionTimeout: '1h' });
      await h.result({ timeout: '10s' });
      return h;
    });
    expect(timerDeletes.some((p) => p.includes(h.workflowId))).toBe(true);
    expect(await timerRows(h.workflowId)).toBe(0);
  });

  it('a sleep still pending when the run returns is deleted with the end', async () => {
    const h = await engine.start('races', {});
    await expect(h.result({ timeout: '10s' })).resolves.toBe('stepped');
    expect(await timerRows(h.workflowId)).toBe(0);
  });
});
