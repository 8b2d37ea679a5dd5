// A partitioned queue's admission rides the round trip of the end that freed the slot
// (docs/decisions/0058): sent right behind the end statement on its connection, in a transaction
// of its own, it admits as a pass would (round-robin from the cursor, per-key and global limits),
// and no pass follows. The engines poll every 60 s here: whatever runs within the tests' deadlines
// was admitted by a rider or a nudged pass, not by the poll.
import pg from 'pg';
import { quietLogger, useTestEngines, waitFor } from '../../../../../test/support/engine.js';
import type { WorkflowContext } from '../../common/types.js';
import type { WeftEngine } from '../engine.js';

/** Runs that hold their slot until released, each on its own gate. */
const began = new Set<string>();
const gates = new Map<string, () => void>();
class Gated {
  async run(ctx: WorkflowContext) {
    await ctx.step('hold', async () => {
      began.add(ctx.workflowId);
      await new Promise<void>((r) => gates.set(ctx.workflowId, r));
    });
  }
}
const release = (id: string) => gates.get(id)!();

// One queue per test: ids and the cursor of one test do not meet the other's.
const queues = { p: { concurrency: 3, partition: { concurrency: 1 } }, r: { concurrency: 3, partition: { concurrency: 1 } } };

describe("a partitioned end's admission rides its round trip (real PostgreSQL)", () => {
  const env = useTestEngines();
  let sql: pg.Client;
  beforeAll(async () => {
    sql = new pg.Client({ connectionString: env.tdb.url });
    sql.on('error', () => undefined);
    await sql.connect();
  });
  afterAll(() => sql.end());
  beforeEach(() => {
    began.clear();
    gates.clear();
  });
  const statuses = async (ids: string[]) =>
    Object.fromEntries(
      (await sql.query<{ id: string; status: string }>(`SELECT id, status FROM weft.weft_workflows WHERE id = ANY($1)`, [ids])).rows.map(
        (r) => [r.id, r.status],
      ),
    );
  const cursor = async (queue: string) =>
    (await sql.query(`SELECT partition_cursor FROM weft.weft_queues WHERE name = $1`, [queue])).rows[0].partition_cursor;
  /** Starts each [id, key] in turn. */
  const started = async (e: WeftEngine, queue: string, ids: Array<[string, string]>) => {
    for (const [workflowId, partitionKey] of ids) await e.start('gated', {}, { workflowId, queue, partitionKey });
  };
  /** An engine whose pass calls are written to its log lines, beside its warnings. */
  const engine = async () => {
    const logger = quietLogger();
    const e = await env.pool.create({ timerPollInterval: '60s', ownership: 'workflow-lease', queues, logger }, (x) =>
      x.register('gated', Gated),
    );
    await e.bootstrap();
    const admit = e.store.queues.admit.bind(e.store.queues);
    e.store.queues.admit = (r) => (logger.lines.push(`pass: ${r.queue}`), admit(r));
    return { e, lines: logger.lines };
  };
  /** The test's workflow ids: its queue's name, then the key and a number. */
  const idsOf = (q: string) => {
    const id = (x: string) => `${q}-${x}`;
    return { a1: id('a1'), b1: id('b1'), c1: id('c1'), c2: id('c2'), d1: id('d1'), a2: id('a2') };
  };
  /**
   * c1, a1, b1 running (the queue full at 3, the cursor on b); c2, d1, a2 waiting, the backlog
   * known to the engine (a full pass).
   */
  const fullQueue = async (e: WeftEngine, q: string) => {
    const { a1, b1, c1, c2, d1, a2 } = idsOf(q);
    await started(e, q, [[c1, 'c']]);
    await waitFor(() => began.has(c1), 'c1 to run');
    await started(e, q, [
      [a1, 'a'],
      [b1, 'b'],
    ]);
    await waitFor(() => began.has(a1) && began.has(b1), 'a1 and b1 to run');
    expect(await cursor(q)).toBe('b');
    await started(e, q, [
      [c2, 'c'],
      [d1, 'd'],
      [a2, 'a'],
    ]);
    await e.runMaintenance();
    expect(await statuses([c2, d1, a2])).toEqual({ [c2]: 'enqueued', [d1]: 'enqueued', [a2]: 'enqueued' });
  };
  const finish = async (running: string[], rest: string[]) => {
    for (const id of running) release(id);
    await waitFor(() => rest.every((id) => began.has(id)), 'the rest to run', 15_000);
    for (const id of rest) release(id);
    await waitFor(async () => Object.values(await statuses(rest)).every((s) => s === 'completed'), 'the rest to end');
  };

  it('admits the next key with room after the cursor, under the per-key and global limits, in its own transaction, without a pass', async () => {
    const { e, lines } = await engine();
    const { a1, b1, c1, c2, d1, a2 } = idsOf('p');
    await fullQueue(e, 'p');
    // Which transaction, on which backend, made a1 completed and d1 running.
    await sql.query(`CREATE TABLE public.rider_log (id text, status text, xid bigint, pid int)`);
    await sql.query(`CREATE FUNCTION public.rider_log() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.status IS DISTINCT FROM OLD.status THEN
          INSERT INTO public.rider_log VALUES (NEW.id, NEW.status, txid_current(), pg_backend_pid());
        END IF;
        RETURN NEW;
      END $$`);
    await sql.query(`CREATE TRIGGER rider_log AFTER UPDATE ON weft.weft_workflows FOR EACH ROW EXECUTE FUNCTION public.rider_log()`);
    try {
      lines.length = 0;
      // a1's end frees one slot (the global limit: one). After the cursor (b): c is at its limit
      // (c1 runs), d has room. Ignoring the cursor would take a2; ignoring the key limit, c2.
      release(a1);
      await waitFor(() => began.has(d1), 'd1 to run', 15_000);
      expect(await statuses([a1, c2, d1, a2])).toEqual({ [a1]: 'completed', [c2]: 'enqueued', [d1]: 'running', [a2]: 'enqueued' });
      expect(await cursor('p')).toBe('d');
      // No pass: the admission rode the end's round trip.
      expect(lines.filter((l) => l.startsWith('pass:'))).toEqual([]);
      const log = (await sql.query<{ id: string; xid: string; pid: number }>(`SELECT id, xid, pid FROM public.rider_log`)).rows;
      const [ended, admitted] = [log.find((r) => r.id === a1)!, log.find((r) => r.id === d1)!];
      // Behind the end on its connection, in a transaction of its own that began after it.
      expect(admitted.pid).toBe(ended.pid);
      expect(BigInt(admitted.xid)).toBeGreaterThan(BigInt(ended.xid));
    } finally {
      await sql.query(`DROP TRIGGER rider_log ON weft.weft_workflows; DROP FUNCTION public.rider_log(); DROP TABLE public.rider_log`);
    }
    await finish([b1, c1, d1], [c2, a2]);
  });

  it('a failing admission does not fail the end that carried it: the run completes, and a pass admits once it can', async () => {
    const { e, lines } = await engine();
    const { a1, b1, c1, c2, d1, a2 } = idsOf('r');
    await fullQueue(e, 'r');
    // Any admission of d1 fails (the rider's, then the pass's it falls back to).
    await sql.query(`CREATE FUNCTION public.refuse_d1() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.id = '${d1}' AND NEW.status = 'running' THEN RAISE EXCEPTION 'd1 refused'; END IF;
        RETURN NEW;
      END $$`);
    await sql.query(`CREATE TRIGGER refuse_d1 BEFORE UPDATE ON weft.weft_workflows FOR EACH ROW EXECUTE FUNCTION public.refuse_d1()`);
    try {
      lines.length = 0;
      release(a1);
      expect(await e.result(a1, { timeout: '15s' })).toBeNull(); // completed: its run returned nothing
      await waitFor(() => lines.some((l) => l.includes('d1 refused')), 'the admission to fail', 15_000);
      // The first admission after the end was the rider's (no pass before its failure).
      expect(lines[0]).toMatch(/^warn: Queue admission failed: .*d1 refused/);
      expect(await statuses([a1, d1])).toEqual({ [a1]: 'completed', [d1]: 'enqueued' });
    } finally {
      await sql.query(`DROP TRIGGER refuse_d1 ON weft.weft_workflows; DROP FUNCTION public.refuse_d1()`);
    }
    await e.runMaintenance();
    await waitFor(() => began.has(d1), 'd1 to run', 15_000);
    await finish([b1, c1, d1], [c2, a2]);
  });
});
