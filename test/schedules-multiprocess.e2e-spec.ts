import { createTestDatabase, TestDatabase } from './support/database.js';
import { waitFor } from './support/engine.js';
import { Child, fixture, spawnChild } from './support/processes.js';

interface Fire {
  workflow_id: string;
  engine: string;
  n: number;
  fire_at: Date;
  created_at: Date;
}

/** Three engine processes sharing one every-1s schedule (allow-all, catchupWindow 2s). */
describe('schedules across engine processes', () => {
  let tdb: TestDatabase;
  const children: Child[] = [];
  const spawn = (id: string) => {
    const c = spawnChild(fixture('schedule-engine'), { DATABASE_URL: tdb.url, WEFT_ENGINE_ID: id, CATCHUP: '2s' });
    children.push(c);
    return c;
  };
  const kill = async (c: Child) => {
    c.proc.kill('SIGKILL');
    await c.exited;
  };
  /** Every run, by fire time: who ran it, how often its step ran, when its row was written. */
  const fires = () =>
    tdb.query<Fire>(
      `SELECT w.id AS workflow_id, min(l.engine) AS engine, count(l.*)::int AS n,
              substring(w.id from 6)::timestamptz AS fire_at, w.created_at
       FROM weft.weft_workflows w LEFT JOIN sched_ledger l ON l.workflow_id = w.id
       WHERE w.id LIKE 'tick@%' GROUP BY w.id ORDER BY w.id`,
    );

  beforeAll(async () => {
    tdb = await createTestDatabase();
    await tdb.query(`CREATE TABLE sched_ledger (workflow_id text NOT NULL, engine text NOT NULL)`);
  });
  afterAll(async () => {
    for (const c of children) if (c.proc.exitCode === null) await kill(c);
    await tdb?.drop();
  });

  it('each fire time runs once; a SIGKILL of the firing engine delays nothing; after a 5 s outage fires inside the window catch up, older ones are missed', async () => {
    const engines = new Map([
      ['A', spawn('A')],
      ['B', spawn('B')],
      ['C', spawn('C')],
    ]);
    await Promise.all([...engines.values()].map((c) => c.waitEvent('ready', 60_000)));
    await waitFor(async () => (await fires()).filter((f) => f.n === 1).length >= 5, 'five fires', 20_000, 100);

    // SIGKILL whichever engine fired last: the next fires come on time from the others.
    const lastFirer = (await fires()).filter((f) => f.n === 1).at(-1)!.engine;
    const killedAt = Date.now();
    await kill(engines.get(lastFirer)!);
    engines.delete(lastFirer);
    const afterKill = await waitFor(
      async () => {
        const later = (await fires()).filter((f) => f.fire_at.getTime() > killedAt && f.n === 1);
        return later.length >= 3 ? later : null;
      },
      'three fires after the kill',
      20_000,
      100,
    );
    for (const f of afterKill!) {
      expect(engines.has(f.engine)).toBe(true);
      // Within one maintenance interval (100 ms) of its fire time, with room for a loaded machine.
      expect(f.created_at.getTime() - f.fire_at.getTime()).toBeLessThan(2000);
    }

    // All engines down for 5 s, then two come back.
    for (const c of engines.values()) await kill(c);
    const downAt = Date.now();
    await new Promise((r) => setTimeout(r, 5000)); // the outage itself
    const backAt = Date.now();
    const [d, e] = [spawn('D'), spawn('E')];
    await Promise.all([d.waitEvent('ready', 60_000), e.waitEvent('ready', 60_000)]);
    const resumedAt = Date.now();
    await waitFor(
      async () => (await fires()).filter((f) => f.fire_at.getTime() > resumedAt + 1000 && f.n === 1).length >= 2,
      'two fires after the restart',
      20_000,
      100,
    );

    const all = await fires();
    // Never twice: every run's step ran exactly once (n = 0 only for a run still starting at the end).
    expect(all.filter((f) => f.n > 1)).toEqual([]);
    await waitFor(async () => (await fires()).every((f) => f.n === 1), 'every run recorded', 10_000, 100);
    const times = (await fires()).map((f) => f.fire_at.getTime());
    const gaps = times
      .slice(1)
      .map((t, i) => [times[i], t - times[i]] as const)
      .filter(([, g]) => g !== 1000);
    // One gap only: the fires of the outage that fell out of the 2 s window before the restart's first pass.
    expect(gaps).toHaveLength(1);
    const [gapStart, gapMs] = gaps[0];
    expect(gapStart).toBeGreaterThanOrEqual(downAt - 2000);
    expect(gapStart + gapMs).toBeGreaterThan(backAt - 2000); // the fires inside the window were caught up
    expect(gapMs).toBeGreaterThan(2000); // and the older ones were missed, not started
    const [row] = await tdb.query<{ recent_runs: Array<{ outcome: string }> }>(
      `SELECT recent_runs FROM weft.weft_schedules WHERE id = 'tick'`,
    );
    expect(row.recent_runs.map((r) => r.outcome)).toEqual(expect.arrayContaining(['missed', 'caught-up', 'started']));
  }, 120_000);
});
