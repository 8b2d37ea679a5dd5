import { createTestDatabase, TestDatabase } from './support/database.js';
import { waitFor } from './support/engine.js';
import { maxOverlap } from './support/intervals.js';
import { Child, EngineProcesses, fixture } from './support/processes.js';

interface Interval {
  workflow_id: string;
  begun_at: Date;
  ended_at: Date | null;
  ends: number;
  begin_engine: string;
  end_engine: string | null;
  tag: string | null;
}

type Item = {
  id?: string;
  queue?: string;
  priority?: number;
  partitionKey?: string;
  ms: number;
  tag?: string;
  singleton?: unknown;
  debounce?: unknown;
};

/** Three engine processes (ownership 'workflow-lease', TTL 1.5 s) sharing three queues. */
describe('queues across engine processes', () => {
  let tdb: TestDatabase;
  const procs = new EngineProcesses(fixture('queue-engine'), () => ({ DATABASE_URL: tdb.url }));
  const send = (c: Child, items: Item[]) => c.proc.stdin!.write(`${JSON.stringify({ cmd: 'start', items })}\n`);
  /** Sends the starts and waits for this batch's "started" (a child's earlier batches printed one too); resolves with their ids. */
  const sendAndWait = async (c: Child, items: Item[], timeoutMs = 20_000): Promise<string[]> => {
    const started = () => c.events.filter((e) => e.event === 'started');
    const before = started().length;
    send(c, items);
    await waitFor(() => started().length > before, 'the starts', timeoutMs);
    return started()[before].ids as string[];
  };
  /** The engine whose claim holds workflow `id` while it runs. */
  const holderOf = async (id: string) =>
    (
      await tdb.query<{ engine_id: string }>(
        `SELECT c.engine_id FROM weft.weft_workflow_claims c JOIN weft.weft_workflows w ON w.id = c.workflow_id
         WHERE c.workflow_id = $1 AND w.status = 'running' AND c.engine_id IS NOT NULL`,
        [id],
      )
    )[0]?.engine_id;
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
      begun_at timestamptz NOT NULL DEFAULT clock_timestamp(), ended_at timestamptz, end_engine text, ends int NOT NULL DEFAULT 0, tag text)`);
    engines = new Map([
      ['A', procs.spawn('A')],
      ['B', procs.spawn('B')],
      ['C', procs.spawn('C')],
    ]);
    await Promise.all([...engines.values()].map((c) => c.waitEvent('ready', 60_000)));
  }, 90_000);
  afterAll(async () => {
    await procs.killAll();
    await tdb?.drop();
  });

  it('concurrency 5: 200 workflows over three engines never run more than 5 at once, all finish, also across a SIGKILL', async () => {
    const items = Array.from({ length: 200 }, (_, i) => ({ id: `c5-${String(i).padStart(3, '0')}`, queue: 'c5', ms: 300 }));
    send(engines.get('A')!, items);
    await engines.get('A')!.waitEvent('started', 30_000);
    await waitFor(async () => (await ledger('c5-')).filter((l) => l.ended_at).length >= 40, 'forty ends', 30_000, 50);

    // SIGKILL the engine with the most step bodies running now (begun, not ended): those are
    // unfinished when it dies, so a survivor must finish them. Choosing by claims instead could
    // pick an engine whose claimed runs had not begun their body (a survivor then runs them whole).
    const busiest = await waitFor(
      async () =>
        (
          await tdb.query<{ begin_engine: string; n: number }>(
            `SELECT begin_engine, count(*)::int AS n FROM queue_ledger WHERE workflow_id LIKE 'c5-%' AND ended_at IS NULL
             GROUP BY begin_engine ORDER BY n DESC LIMIT 1`,
          )
        )[0],
      'an engine running a step body of the queue',
      10_000,
      10,
    );
    const victim = busiest.begin_engine;
    await procs.kill(engines.get(victim)!);
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

  it('partitioned: 1,000 of a flooding key waiting; a small key of 5 starts within two admission passes; no key runs more than 2 at once, also across a SIGKILL', async () => {
    const d = await procs.ready('D', {}, 60_000);
    engines.set('D', d);
    // Every admission (enqueued -> running) with the transaction that made it (one admission call is
    // one transaction), in the order the queue's lock let them through (n), and whether the small
    // key's first start was committed by then (saw_small, read after the admitting statement's own
    // snapshot: a pass that did not see it here could not have admitted it).
    await tdb.query(`CREATE TABLE admission_log (n bigserial, workflow_id text, partition_key text, xid bigint, saw_small boolean)`);
    await tdb.query(`CREATE FUNCTION log_admission() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
      INSERT INTO public.admission_log (workflow_id, partition_key, xid, saw_small)
      VALUES (NEW.id, NEW.partition_key, txid_current(), EXISTS (SELECT 1 FROM weft.weft_workflows WHERE id = 'pk-small-0'));
      RETURN NEW; END $$`);
    await tdb.query(`CREATE TRIGGER log_admission AFTER UPDATE ON weft.weft_workflows FOR EACH ROW
      WHEN (OLD.status = 'enqueued' AND NEW.status = 'running' AND NEW.queue = 'pk') EXECUTE FUNCTION log_admission()`);
    const [first, second] = [...engines.values()];
    // Stored from two engines at once (each stores its items one after another), and more than
    // 1,000: the flood runs while it is being stored.
    const flood = Array.from({ length: 1300 }, (_, i) => ({
      id: `pk-big-${String(i).padStart(4, '0')}`,
      queue: 'pk',
      partitionKey: 'big',
      ms: 30,
    }));
    await Promise.all([sendAndWait(first, flood.slice(0, 650), 120_000), sendAndWait(second, flood.slice(650), 120_000)]);
    expect((await statuses('pk-big-')).enqueued).toBeGreaterThanOrEqual(1000);
    const small = Array.from({ length: 5 }, (_, i) => ({ id: `pk-small-${i}`, queue: 'pk', partitionKey: 'small', ms: 150 }));
    await sendAndWait(second, small);
    // SIGKILL the engine that holds the most of the queue's runs while the small key runs.
    await waitFor(async () => (await ledger('pk-small')).length >= 2, 'the small key to run', 20_000, 20);
    const busiest = (
      await tdb.query<{ engine_id: string }>(
        `SELECT c.engine_id FROM weft.weft_workflows w JOIN weft.weft_workflow_claims c ON c.workflow_id = w.id
         WHERE w.queue = 'pk' AND w.status = 'running' AND c.engine_id IS NOT NULL GROUP BY c.engine_id ORDER BY count(*) DESC LIMIT 1`,
      )
    )[0].engine_id;
    await procs.kill(engines.get(busiest)!);
    engines.delete(busiest);

    await waitFor(async () => (await statuses('pk-')).completed === 1305, 'all 1,305 completed', 200_000, 200);
    const rows = await ledger('pk-');
    expect(rows).toHaveLength(1305);
    for (const key of ['big', 'small']) {
      const mine = rows.filter((r) => r.workflow_id.split('-')[1] === key);
      const overlap = maxOverlap(mine.map((r) => ({ from: r.begun_at.getTime(), to: r.ended_at!.getTime() })));
      expect(overlap, key).toBeLessThanOrEqual(2);
      expect(overlap, key).toBe(2); // the key's limit was reached, not merely never approached
    }
    // The admission passes that could see the small key's first start: its first admission is in
    // the first or second of them (the second when the first had taken the queue's lock, and read,
    // before the start committed), although 1,000 or more of the flood were waiting. Counting from
    // the start's created_at instead (its insert's clock, before its commit) also counted passes of
    // the three engines that ran between the insert and its commit and could not see it.
    const log = await tdb.query<{ workflow_id: string; xid: string }>(
      `SELECT workflow_id, xid::text AS xid FROM admission_log WHERE saw_small ORDER BY n`,
    );
    const passes = [...new Set(log.map((l) => l.xid))];
    const firstSmall = log.find((l) => l.workflow_id.startsWith('pk-small-'))!;
    expect(passes.indexOf(firstSmall.xid)).toBeLessThan(2);
  }, 300_000);

  it('debounce across two engines: calls in turn from both start one workflow, once, with the last input', async () => {
    const [a, b] = [...engines.values()];
    const ids = new Set<string>();
    for (let i = 0; i < 10; i++) {
      const [id] = await sendAndWait(i % 2 ? b : a, [{ ms: 10, tag: `deb-${i}`, debounce: { key: 'tenant-7', delay: '5s' } }]);
      ids.add(id);
    }
    expect(ids.size).toBe(1);
    const [id] = ids;
    // A window of 5 s: the calls (each a round trip through a child process) stay inside it on a loaded machine.
    await waitFor(async () => (await statuses(id)).completed === 1, 'the debounced start to complete', 30_000, 100);
    // A second start would have come by now (the engines look at timers every 100 ms).
    await new Promise((r) => setTimeout(r, 1000));
    const runs = await tdb.query<{ workflow_id: string; tag: string }>(`SELECT workflow_id, tag FROM queue_ledger WHERE tag LIKE 'deb-%'`);
    expect(runs).toEqual([{ workflow_id: id, tag: 'deb-9' }]);
  }, 60_000);

  it('singleton across a takeover: the holder is taken over, starts meanwhile get its handle, and queued starts run after it, one at a time', async () => {
    const e = await procs.ready('E', {}, 60_000);
    engines.set('E', e);
    const [x] = [...engines.values()];
    const [holder] = await sendAndWait(x, [{ ms: 4000, tag: 'solo-holder', singleton: 'solo' }]);
    await waitFor(async () => (await ledger(holder)).length === 1, 'the holder to run', 20_000, 20);
    const owner = await waitFor(() => holderOf(holder), 'its claim', 10_000, 20);
    const others = [...engines.entries()].filter(([k]) => k !== owner).map(([, c]) => c);
    const queued = await sendAndWait(
      others[0],
      [1, 2, 3].map((n) => ({ ms: 100, tag: `solo-q${n}`, singleton: { key: 'solo', onConflict: 'queue' } })),
    );
    await procs.kill(engines.get(owner)!);
    engines.delete(owner);
    // While the holder waits for its takeover, and after, a start with the key gets the holder's handle.
    expect(await sendAndWait(others[1] ?? others[0], [{ ms: 10, singleton: 'solo' }])).toEqual([holder]);
    await waitFor(async () => (await holderOf(holder)) !== undefined && (await holderOf(holder)) !== owner, 'the takeover', 20_000, 50);
    expect(await sendAndWait(others[0], [{ ms: 10, singleton: 'solo' }])).toEqual([holder]);
    await waitFor(
      async () => (await tdb.query(`SELECT 1 FROM queue_ledger WHERE tag LIKE 'solo-%' AND ended_at IS NOT NULL`)).length === 4,
      'the holder and the three queued to end',
      60_000,
      100,
    );
    const rows = await tdb.query<Interval>(`SELECT * FROM queue_ledger WHERE tag LIKE 'solo-%' ORDER BY begun_at`);
    expect(rows.map((r) => r.tag)).toEqual(['solo-holder', 'solo-q1', 'solo-q2', 'solo-q3']);
    expect(rows.map((r) => r.workflow_id)).toEqual([holder, ...queued]);
    expect(rows[0].end_engine).not.toBe(owner); // taken over
    expect(maxOverlap(rows.map((r) => ({ from: r.begun_at.getTime(), to: r.ended_at!.getTime() })))).toBe(1);
  }, 120_000);
});
