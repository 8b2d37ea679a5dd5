// The debounce's and the queued singletons' statements reach their rows by key (the debounce
// index, the singleton indexes, the primary key), whatever weft_workflows looked like at its last
// ANALYZE. Analyzed between bursts, with no workflow pending and no singleton key held, the
// planner took 'pending' for absent, and generic plans read every pending workflow through
// weft_workflows_status_type_idx: a debounced call that met a closed window (the detach), and
// each fire of a queued singleton start (its own row and the older waiters), and they scanned
// every live holder of every key of weft_workflows_singleton_idx
// (docs/decisions/0061-debounce-and-singleton-plans-after-an-empty-analyze.md).
import {
  capturePlans,
  debounceRows,
  pendingTimers,
  planNodes,
  plansOf,
  type PlanNode,
  usePlanDatabase,
} from '../../../../test/support/plans.js';
import { WorkflowDebounce } from './repositories/workflow-debounce.js';
import { SingletonWaits, singletonStartSql } from './repositories/workflow-start-singleton.js';
import { type SqlClient, statementName } from './sql-client.js';

interface Node extends PlanNode {
  'Index Cond'?: string;
  Plans?: Node[];
}

/** The index scans of Weft's tables in a plan, as `index: its condition`, and its sequential scans of weft_workflows. */
const scans = (plan: Node) =>
  (planNodes(plan) as Node[]).flatMap((n) =>
    n['Index Name']?.startsWith('weft_')
      ? [`${n['Index Name']}: ${n['Index Cond'] ?? '(none)'}`]
      : n['Node Type'] === 'Seq Scan' && n['Relation Name'] === 'weft_workflows'
        ? ['weft_workflows: (none)']
        : [],
  );

describe('debounce and queued singleton plans after an ANALYZE that saw no pending workflow (real PostgreSQL)', () => {
  const env = usePlanDatabase();
  let plans: Node[] = [];

  const insert = (n: number, status: string, type: string, tag: string, debounced: boolean, waits: boolean, holds = false) =>
    debounceRows(env.db, n, status, type, tag, debounced, waits, holds);
  const timers = () => pendingTimers(env.db);

  beforeAll(async () => {
    // Bursts that went through (debounced windows and queued singleton starts fired, ran and
    // ended; their keys held and let go), analyzed once they had, then the next one. An ANALYZE
    // without a VACUUM, as autovacuum's often is (its threshold is half the VACUUM's): an
    // index-only scan is then no cheaper than a heap visit.
    for (let burst = 0; burst < 3; burst++) {
      await insert(2000, 'pending', 'd', `b${burst}`, true, false);
      await insert(2000, 'pending', 's', `b${burst}`, false, true);
      await insert(2000, 'running', 'o', `b${burst}`, false, false); // other work beside them
      await timers();
      await env.db.query(`UPDATE weft.weft_workflows SET status = 'completed', singleton_key = singleton_wait, singleton_wait = NULL
                          WHERE status IN ('pending', 'running')`);
      await env.db.query(`DELETE FROM weft.weft_timers`);
      await env.db.query('ANALYZE weft.weft_workflows, weft.weft_timers');
    }
    await insert(2000, 'pending', 'd', 'live', true, false); // open windows, one per key
    await insert(1000, 'pending', 's', 'live', false, true); // waiting for 50 keys
    await insert(50, 'running', 's', 'live', false, false, true); // their holders
    await timers();
    // One window that has closed: its start is due.
    await env.db.query(`UPDATE weft.weft_workflows SET start_at = now() - interval '1 second' WHERE id = 'pending-d-live-7'`);
    plans = await capturePlans<Node>(env.db);
  });

  /** A client that sends what a repository sends, as named statements (generic plans: plan_cache_mode below). */
  const client = {
    query: async (sql: string, params: unknown[] = []) =>
      (await env.db.query({ name: statementName(sql), text: sql, values: params })).rows,
  } as unknown as SqlClient;

  /** The index scans of weft_workflows in the generic plans of what `run` sends, in a transaction rolled back. */
  async function scansOf(run: () => Promise<unknown>): Promise<string[]> {
    const caught = await plansOf(env.db, plans, run, true);
    expect(caught.length).toBeGreaterThan(0);
    return [...new Set(caught.flatMap(scans))].sort();
  }

  const expectByKey = (used: string[]) => {
    expect(used.filter((s) => s.startsWith('weft_workflows_status_type_idx'))).toEqual([]);
    expect(used.filter((s) => s.endsWith('(none)'))).toEqual([]);
  };
  const names = (used: string[]) => [...new Set(used.map((s) => s.slice(0, s.indexOf(':'))))].sort();

  it('a debounced call that meets a closed window detaches it by key and opens a new one', async () => {
    const debounce = new WorkflowDebounce(client, 'weft', () => 0);
    let started: { id: string; inserted: boolean } | undefined;
    const used = await scansOf(async () => {
      started = await debounce.start({
        id: 'new-window',
        type: 'd',
        input: 1,
        debounce: { key: 'key-live-7', delayMs: 60_000, maxDelayMs: null },
      } as unknown as Parameters<WorkflowDebounce['start']>[0]);
      const [old] = (await env.db.query(`SELECT debounce_key FROM weft.weft_workflows WHERE id = 'pending-d-live-7'`)).rows;
      expect(old.debounce_key).toBeNull();
    });
    expect(started).toMatchObject({ id: 'new-window', inserted: true });
    expectByKey(used);
  });

  it("a queued singleton start's fire takes its key by key (its row, the holder, the older waiters)", async () => {
    const waits = new SingletonWaits(client, 'weft', () => 0);
    // A key whose holder ended: its oldest waiter takes it.
    await env.db.query(`UPDATE weft.weft_workflows SET status = 'completed' WHERE id = 'running-s-live-3'`);
    try {
      for (const [id, takes] of [
        ['pending-s-live-3', true],
        ['pending-s-live-53', false],
        ['pending-s-live-4', false],
      ] as const) {
        let promoted: boolean | undefined;
        const used = await scansOf(async () => (promoted = await waits.promote(id)));
        expect(promoted).toBe(takes);
        expectByKey(used);
        expect(names(used)).toEqual(['weft_workflows_pkey', 'weft_workflows_singleton_idx', 'weft_workflows_singleton_wait_idx']);
      }
    } finally {
      await env.db.query(`UPDATE weft.weft_workflows SET status = 'running' WHERE id = 'running-s-live-3'`);
    }
  });

  it("a holder's end wakes its key's oldest waiter by key", async () => {
    const waits = new SingletonWaits(client, 'weft', () => 0);
    let woke: boolean | undefined;
    const used = await scansOf(async () => (woke = await waits.wakeNext('running-s-live-3')));
    expect(woke).toBe(true);
    expectByKey(used);
    expect(names(used)).toEqual(['weft_timers_workflow_seq_uq', 'weft_workflows_pkey', 'weft_workflows_singleton_wait_idx']);
  });

  it("a delayed start's fire reads its row, a waiter's recheck its timer, and a queued start its id by key (found so)", async () => {
    const waits = new SingletonWaits(client, 'weft', () => 0);
    const debounce = new WorkflowDebounce(client, 'weft', () => 0);
    const used = await scansOf(async () => {
      expect(await debounce.forFire('pending-s-live-9')).toMatchObject({ waits: true, debounced: false });
      await waits.recheck('pending-s-live-9');
      const queued = await waits.queueBehind(
        { id: 'queued', type: 's', input: 1, timers: [], deadlineInMs: null, startInMs: 0 } as unknown as Parameters<
          SingletonWaits['queueBehind']
        >[0],
        'wkey-9',
      );
      expect(queued.inserted).toBe(true);
    });
    expectByKey(used);
  });

  it('a singleton start that meets the live holder reads it by key', async () => {
    const used = await scansOf(async () => {
      const sql = singletonStartSql('weft');
      const params: unknown[] = Array.from({ length: 20 }, () => null);
      Object.assign(params, { 0: 'another', 1: 's', 2: 'running', 3: 'null', 10: 'wkey-3', 13: '[]' });
      const [met] = await client.query<{ id: string; inserted: boolean }>(sql, params);
      expect(met).toMatchObject({ id: 'running-s-live-3', inserted: false });
    });
    expectByKey(used);
  });
});
