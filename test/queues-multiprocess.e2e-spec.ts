import { createTestDatabase, TestDatabase } from './support/database.js';
import { waitFor } from './support/engine.js';
import { Child, fixture, spawnChild } from './support/processes.js';

interface Interval {
  workflow_id: string;
  begun_at: Date;
  ended_at: Date | null;
  ends: number;
  begin_engine: string;
  end_engine: string | null;
}

/** The most intervals open at one instant (an end at the same instant as a begin closes first). */
function maxOverlap(intervals: Array<{ from: number; to: number }>): number {
  const edges = intervals.flatMap((i) => [
    [i.from, 1],
    [i.to, -1],
  ]);
  edges.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let open = 0;
  let max = 0;
  for (const [, d] of edges) max = Math.max(max, (open += d));
  return max;
}

/** Three engine processes (ownership 'workflow-lease', TTL 1.5 s) sharing three queues. */
describe('queues across engine processes', () => {
  let tdb: TestDatabase;
  const children: Child[] = [];
  const spawn = (id: string) => {
    const c = spawnChild(fixture('queue-engine'), { DATABASE_URL: tdb.url, WEFT_ENGINE_ID: id });
    children.push(c);
    return c;
  };
  const kill = async (c: Child) => {
    c.proc.kill('SIGKILL');
    await c.exited;
  };
  const send = (c: Child, items: Array<{ id: string; queue: string; priority?: number; partitionKey?: string; ms: number }>) =>
    c.proc.stdin!.write(`${JSON.stringify({ cmd: 'start', items })}\n`);
  /** Sends the starts and waits for this batch's "started" (a child's earlier batches printed one too). */
  const sendAndWait = async (
    c: Child,
    items: Array<{ id: string; queue: string; priority?: number; partitionKey?: string; ms: number }>,
  ) => {
    const before = c.events.filter((e) => e.event === 'started').length;
    send(c, items);
    await waitFor(() => c.events.filter((e) => e.event === 'started').length > before, 'the starts', 20_000);
  };
  const ledger = (prefix: string) =>
    tdb.query<Interval>(`SELECT * FROM queue_ledger WHERE workflow_id LIKE $1 ORDER BY begun_at`, [`${prefix}%`]);
  const statuses = async (prefix: string) =>
    Object.fromEntries(
      (
        await tdb.query<{ status: string; n: number }>(
          `SELECT status, count(*)::int AS n FROM weft.weft_workflows WHERE id LIKE $1 GROUP BY status`,
          [`${prefix}%`],
        )
      ).map((r) => [r.status, r.n]),
    ) as Record<string, number>;
  const admissions = async (prefix: string) =>
    (
      await tdb.query<{ id: string; t: Date }>(
        `SELECT id, admitted_at AS t FROM weft.weft_workflows WHERE id LIKE $1 AND admitted_at IS NOT NULL ORDER BY admitted_at, id`,
        [`${prefix}%`],
      )
    ).map((r) => ({ id: r.id, t: r.t.getTime() }));

  let engines: Map<string, Child>;
  beforeAll(async () => {
    tdb = await createTestDatabase();
    await tdb.query(`CREATE TABLE queue_ledger (workflow_id text PRIMARY KEY, begin_engine text NOT NULL,
      begun_at timestamptz NOT NULL DEFAULT clock_timestamp(), ended_at timestamptz, end_engine text, ends int NOT NULL DEFAULT 0)`);
    engines = new Map([
      ['A', spawn('A')],
      ['B', spawn('B')],
      ['C', spawn('C')],
    ]);
    await Promise.all([...engines.values()].map((c) => c.waitEvent('ready', 60_000)));
  }, 90_000);
  afterAll(async () => {
    for (const c of children) if (c.proc.exitCode === null) await kill(c);
    await tdb?.drop();
  });

  it('concurrency 5: 200 workflows over three engines never run more than 5 at once, all finish, also across a SIGKILL', async () => {
    const items = Array.from({ length: 200 }, (_, i) => ({ id: `c5-${String(i).padStart(3, '0')}`, queue: 'c5', ms: 120 }));
    send(engines.get('A')!, items);
    await engines.get('A')!.waitEvent('started', 30_000);
    await waitFor(async () => (await ledger('c5-')).filter((l) => l.ended_at).length >= 40, 'forty ends', 30_000, 50);

    // SIGKILL the engine that holds the most of the queue's runs (all 200 are stored by now).
    const busiest = await waitFor(
      async () =>
        (
          await tdb.query<{ engine_id: string; n: number }>(
            `SELECT c.engine_id, count(*)::int AS n FROM weft.weft_workflows w JOIN weft.weft_workflow_claims c ON c.workflow_id = w.id
             WHERE w.queue = 'c5' AND w.status = 'running' AND c.engine_id IS NOT NULL GROUP BY c.engine_id ORDER BY n DESC LIMIT 1`,
          )
        )[0],
      'an engine running some of the queue',
      10_000,
      10,
    );
    const victim = busiest.engine_id;
    await kill(engines.get(victim)!);
    engines.delete(victim);

    await waitFor(async () => (await statuses('c5-')).completed === 200, 'all 200 completed', 90_000, 100);
    const rows = await ledger('c5-');
    expect(rows).toHaveLength(200);
    expect(rows.every((r) => r.ended_at !== null && r.ends >= 1)).toBe(true);
    const overlap = maxOverlap(rows.map((r) => ({ from: r.begun_at.getTime(), to: r.ended_at!.getTime() })));
    expect(overlap).toBeLessThanOrEqual(5);
    expect(overlap).toBeGreaterThanOrEqual(3); // the queue was used, not run one at a time
    // The victim's unfinished runs were taken over and finished by a survivor.
    const takenOver = rows.filter((r) => r.begin_engine === victim && r.end_engine !== victim);
    expect(takenOver.length).toBeGreaterThan(0);
    expect(takenOver.every((r) => engines.has(r.end_engine!))).toBe(true);
  }, 180_000);

  it('rateLimit 10 per 1 s across the engines: no sliding 1-second window holds more than 10 admissions', async () => {
    const survivors = [...engines.values()];
    const items = Array.from({ length: 45 }, (_, i) => ({ id: `r10-${String(i).padStart(2, '0')}`, queue: 'r10', ms: 10 }));
    // Started from every engine at once, so every engine's admission competes.
    survivors.forEach((c, k) =>
      send(
        c,
        items.filter((_, i) => i % survivors.length === k),
      ),
    );
    await waitFor(async () => (await statuses('r10-')).completed === 45, 'all 45 completed', 60_000, 100);
    const times = (await admissions('r10-')).map((a) => a.t);
    expect(times).toHaveLength(45);
    for (let i = 0; i + 10 < times.length; i++) expect(times[i + 10] - times[i]).toBeGreaterThanOrEqual(1000);
    // 45 admissions at 10 per second take at least four full windows.
    expect(times[44] - times[0]).toBeGreaterThanOrEqual(4000);
  }, 120_000);

  it('priorities admit in order across the engines, FIFO within one', async () => {
    const [first, second] = [...engines.values()];
    // A long one takes the single slot first, so everything after waits enqueued.
    send(first, [{ id: 'prio-0-blocker', queue: 'prio', ms: 4000 }]); // long enough for the six starts on a busy machine
    await waitFor(async () => (await ledger('prio-0-blocker')).length === 1, 'the blocker to run', 20_000, 50);
    const plan: Array<[string, number]> = [
      ['prio-a', 0],
      ['prio-b', 10],
      ['prio-c', -5],
      ['prio-d', 10],
      ['prio-e', 0],
      ['prio-f', 3],
    ];
    await sendAndWait(
      second,
      plan.map(([id, priority]) => ({ id, queue: 'prio', priority, ms: 20 })),
    );
    expect((await statuses('prio-')).enqueued).toBe(plan.length); // all waiting behind the blocker
    await waitFor(async () => (await statuses('prio-')).completed === plan.length + 1, 'all completed', 30_000, 100);
    expect((await admissions('prio-')).map((a) => a.id)).toEqual([
      'prio-0-blocker',
      'prio-b',
      'prio-d',
      'prio-f',
      'prio-a',
      'prio-e',
      'prio-c',
    ]);
  }, 60_000);

  it('partitioned: a flooding key cannot delay small keys, and no key runs more than 2 at once, also across a SIGKILL', async () => {
    const d = spawn('D');
    await d.waitEvent('ready', 60_000);
    engines.set('D', d);
    const [first, second] = [...engines.values()];
    const flood = Array.from({ length: 400 }, (_, i) => ({
      id: `pk-big-${String(i).padStart(3, '0')}`,
      queue: 'pk',
      partitionKey: 'big',
      ms: 30,
    }));
    await sendAndWait(first, flood);
    await waitFor(async () => (await ledger('pk-big-')).filter((l) => l.ended_at).length >= 4, 'the flood to run', 30_000, 50);
    const small = ['s1', 's2', 's3', 's4'].flatMap((k) =>
      Array.from({ length: 5 }, (_, i) => ({ id: `pk-${k}-${i}`, queue: 'pk', partitionKey: k, ms: 150 })),
    );
    await sendAndWait(second, small);
    const storedAt = Date.now();
    // SIGKILL the engine that holds the most of the queue's runs while the small keys run.
    await waitFor(async () => (await ledger('pk-s')).length >= 4, 'the small keys to run', 20_000, 20);
    const busiest = (
      await tdb.query<{ engine_id: string }>(
        `SELECT c.engine_id FROM weft.weft_workflows w JOIN weft.weft_workflow_claims c ON c.workflow_id = w.id
         WHERE w.queue = 'pk' AND w.status = 'running' AND c.engine_id IS NOT NULL GROUP BY c.engine_id ORDER BY count(*) DESC LIMIT 1`,
      )
    )[0].engine_id;
    await kill(engines.get(busiest)!);
    engines.delete(busiest);

    await waitFor(async () => (await statuses('pk-')).completed === 420, 'all 420 completed', 120_000, 100);
    const rows = await ledger('pk-');
    expect(rows).toHaveLength(420);
    const keyOf = (id: string) => id.split('-')[1];
    for (const key of ['big', 's1', 's2', 's3', 's4']) {
      const mine = rows.filter((r) => keyOf(r.workflow_id) === key);
      const overlap = maxOverlap(mine.map((r) => ({ from: r.begun_at.getTime(), to: r.ended_at!.getTime() })));
      expect(overlap).toBeLessThanOrEqual(2);
      if (key === 'big') expect(overlap).toBe(2); // the key's limit was reached, not merely never approached
    }
    expect(maxOverlap(rows.map((r) => ({ from: r.begun_at.getTime(), to: r.ended_at!.getTime() })))).toBeLessThanOrEqual(6);
    // Each small key's first run was admitted before the flood's next few: it did not wait behind hundreds.
    const adm = await admissions('pk-');
    const bigAfter = adm.filter((a) => a.id.startsWith('pk-big-') && a.t >= storedAt);
    expect(bigAfter.length).toBeGreaterThan(20);
    for (const k of ['s1', 's2', 's3', 's4']) {
      const firstOfKey = adm.find((a) => a.id.startsWith(`pk-${k}-`))!;
      expect(firstOfKey.t).toBeLessThan(bigAfter[4].t);
    }
  }, 240_000);
});
