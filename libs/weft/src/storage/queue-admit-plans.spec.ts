// An admission reaches the rows it admits by their ids, and a partitioned one seeks its first key
// past the cursor, in the generic plans it runs (the admission function forces them; a pooled
// connection runs the hand-off's advance statement on one after its 5th use). With a status
// condition beside the ids, the plan scanned the whole enqueued index (every queue's backlog) for
// them; with the cursor in an OR, the walk read every key before it: both on every call, growing
// with the backlog (docs/decisions/0045-admission-reads-no-backlog.md). The table is as a busy
// queue has it: analyzed while its backlog was small, then filled. Plans are judged here, read
// through auto_explain (PL/pgSQL's statements are not reachable by EXPLAIN).
import { capturePlans, endsHandingOff, usePlanDatabase } from '../../../../test/support/plans.js';

interface Node {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Subplan Name'?: string;
  'Scan Direction'?: string;
  'Index Cond'?: string;
  'Actual Loops'?: number;
  Filter?: string;
  Plans?: Node[];
}

const nodes = (n: Node): Node[] => [n, ...(n.Plans ?? []).flatMap(nodes)];
/** How the CTE named `cte` reads weft_workflows: its scans of the table and their indexes, by node type. */
const scansUnder = (root: Node, cte: string) =>
  nodes(nodes(root).find((n) => n['Subplan Name'] === `CTE ${cte}`)!)
    .filter(
      (n) => (n['Relation Name'] === 'weft_workflows' && n['Node Type'].endsWith('Scan')) || n['Index Name']?.startsWith('weft_workflows'),
    )
    .map((n) => `${n['Node Type']} ${n['Index Name'] ?? ''}`.trim());
/** Reads through the primary key only (an index scan, or a bitmap of it). */
const byIdOnly = (scans: string[]) =>
  scans.some((s) => s.endsWith('weft_workflows_pkey')) && scans.every((s) => s === 'Bitmap Heap Scan' || s.endsWith('weft_workflows_pkey'));

describe('queue admission plans: by id, and seeks past the cursor (real PostgreSQL)', () => {
  const env = usePlanDatabase();
  let plans: Node[] = [];

  beforeAll(async () => {
    const insert = (from: number, to: number, status: string, queue: string, key: string | null) =>
      env.db.query(
        `INSERT INTO weft.weft_workflows (id, type, status, input, version, queue, partition_key, created_at)
         SELECT $3 || '-' || $4 || g, 't', $3, 'null', 1, $4, CASE WHEN $5::text IS NULL THEN NULL ELSE $5 || (g % 100) END,
                now() + (g || ' milliseconds')::interval
         FROM generate_series($1::int, $2::int) g`,
        [from, to, status, queue, key],
      );
    await insert(1, 3000, 'completed', 'plain', null);
    await insert(1, 5, 'enqueued', 'plain', null);
    await insert(1, 5, 'enqueued', 'parts', 'tenant-');
    await env.db.query('ANALYZE weft.weft_workflows');
    await insert(6, 3000, 'enqueued', 'plain', null);
    await insert(6, 3000, 'enqueued', 'parts', 'tenant-');
    await insert(1, 1, 'running', 'plain', null);
    plans = await capturePlans<Node>(env.db);
  });

  /** The plan of the statement whose scans include the CTE `cte`, among those `run` produced. */
  async function planOf(cte: string, run: () => Promise<unknown>): Promise<Node> {
    plans.length = 0;
    await run();
    const plan = plans.find((p) => nodes(p).some((n) => n['Subplan Name'] === `CTE ${cte}`));
    expect(plan, `a plan with CTE ${cte}`).toBeDefined();
    return plan!;
  }

  const admit = (queue: string, partitioned: boolean) =>
    env.db.query(
      `SELECT * FROM weft.weft_queue_admit($1, 4, 50, NULL, NULL, NULL, 0, ARRAY['t'], NULL, NULL, NULL, NULL, NULL, $2, $3, NULL, 0)`,
      [queue, partitioned, partitioned ? 2 : null],
    );

  it.each([false, true])("the admission function's UPDATE finds the admitted rows by id (partitioned: %s)", async (partitioned) => {
    const plan = await planOf('upd', () => admit(partitioned ? 'parts' : 'plain', partitioned));
    expect(byIdOnly(scansUnder(plan, 'upd')), scansUnder(plan, 'upd').join(', ')).toBe(true);
  });

  it("a partitioned admission's walk seeks its keys past the cursor, reading none before it", async () => {
    await admit('parts', true); // sets the cursor
    const plan = await planOf('keys_after', () => admit('parts', true));
    const cte = nodes(nodes(plan).find((n) => n['Subplan Name'] === 'CTE keys_after')!);
    expect(cte.filter((n) => n.Filter?.includes('partition_key')).map((n) => n.Filter)).toEqual([]);
  });

  /** `run` with auto_explain reporting executed loops (no timing). */
  async function analyzed<T>(run: () => Promise<T>): Promise<T> {
    await env.db.query('SET auto_explain.log_analyze = on');
    await env.db.query('SET auto_explain.log_timing = off');
    try {
      return await run();
    } finally {
      await env.db.query('SET auto_explain.log_analyze = off');
    }
  }
  /** The scans of weft_workflows_partition_admitted_idx under key_room. */
  const admittedScans = (plan: Node) =>
    nodes(nodes(plan).find((n) => n['Subplan Name'] === 'CTE key_room')!).filter(
      (n) => n['Index Name'] === 'weft_workflows_partition_admitted_idx',
    );

  // docs/decisions/0048: the walk read every admission each key ever had, with or without a
  // per-key rate limit (an operator evaluates both sides; the window's volatile bound was a filter).
  it('a partitioned admission reads no admission history without a per-key rate limit, and seeks its window with one', async () => {
    await env.db.query(
      `INSERT INTO weft.weft_workflows (id, type, status, input, version, queue, partition_key, admitted_at)
       SELECT 'hist-' || g, 't', 'completed', 'null', 1, 'parts', 'tenant-' || (g % 100), now() - interval '1 hour'
       FROM generate_series(1, 2000) g`,
    );
    const none = await analyzed(() => planOf('key_room', () => admit('parts', true)));
    expect(admittedScans(none).length).toBeGreaterThan(0);
    expect(admittedScans(none).map((n) => n['Actual Loops'])).toEqual(admittedScans(none).map(() => 0));
    const limited = await analyzed(() =>
      planOf('key_room', () =>
        env.db.query(
          `SELECT * FROM weft.weft_queue_admit('parts', 4, 50, NULL, NULL, NULL, 0, ARRAY['t'], NULL, NULL, NULL, NULL, NULL,
                                                true, 2, 100, 60000)`,
        ),
      ),
    );
    const scans = admittedScans(limited).filter((n) => (n['Actual Loops'] ?? 0) > 0);
    expect(scans.length).toBeGreaterThan(0);
    for (const scan of scans) {
      expect(scan['Index Cond']).toContain('admitted_at');
      expect(scan.Filter ?? '').not.toContain('admitted_at');
    }
  });

  /**
   * The generic plan of the end commit of the plain queue's running workflow, handing its slot on
   * (the statement whose scans include the CTE `cte`), in a transaction rolled back after.
   */
  async function endCommitPlan(cte: string): Promise<Node> {
    await env.db.query('BEGIN');
    try {
      await env.db.query('SET LOCAL plan_cache_mode = force_generic_plan');
      return await planOf(cte, () => env.db.query(endsHandingOff(['running-plain1'])));
    } finally {
      await env.db.query('ROLLBACK');
    }
  }

  /** The directions of the scans of weft_workflows_enqueued_idx over a queue's whole range (no priority bound). */
  const wholeRange = (plan: Node) =>
    nodes(plan)
      .filter((n) => n['Index Name'] === 'weft_workflows_enqueued_idx' && !n['Index Cond']?.includes('priority'))
      .map((n) => n['Scan Direction']);
  const backwardOnly = (dirs: Array<string | undefined>) => dirs.length > 0 && dirs.every((d) => d === 'Backward');

  // docs/decisions/0048: the oldest end of a queue's range holds the dead entry of every row admitted
  // since the last vacuum; counting whether work is left from there stepped over all of them.
  it('whether work is left is counted from the newest end of the backlog (admission and hand-off)', async () => {
    const admission = wholeRange(await planOf('upd', () => admit('plain', false)));
    expect(backwardOnly(admission), admission.join(', ')).toBe(true);
    const plan = await endCommitPlan('ho_left');
    expect(backwardOnly(wholeRange(plan)), wholeRange(plan).join(', ')).toBe(true);
  });

  it("the hand-off's UPDATE in an end commit finds the picked rows by id", async () => {
    const plan = await endCommitPlan('ho_upd');
    expect(byIdOnly(scansUnder(plan, 'ho_upd')), scansUnder(plan, 'ho_upd').join(', ')).toBe(true);
  });
});
