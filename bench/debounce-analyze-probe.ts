// bench/debounce-analyze-probe (docs/decisions/0061): the debounce's and the queued singletons'
// calls, timed after an ANALYZE that saw no pending workflow. Three bursts of 2,000 x SCALE
// debounced windows, 2,000 x SCALE queued singleton starts and 2,000 other running workflows end,
// each followed by ANALYZE; then 4,000 x SCALE open windows, 1,000 x SCALE waiters for 50 keys and
// their holders, each pending workflow with its timer. Each call as the repositories make it
// (named statements, generic plans) in a transaction rolled back, median of 25 in ms. Not in
// `npm run bench`. Alternate it with main's checkout (copy this file there) to compare.
// SCALE=5 node --import ./test/support/register-ts.js bench/debounce-analyze-probe.ts
import pg from 'pg';
import { openDatabase } from '../libs/weft/src/storage/data-source.js';
import { WorkflowDebounce } from '../libs/weft/src/storage/repositories/workflow-debounce.js';
import { SingletonWaits } from '../libs/weft/src/storage/repositories/workflow-start-singleton.js';
import { statementName } from '../libs/weft/src/storage/sql-client.js';
import { debounceRows, pendingTimers } from '../test/support/plans.js';
import { medianRolledBackMs, withFreshDatabase } from './support.js';

await withFreshDatabase(async (url) => {
  await (await openDatabase({ database: { url }, schema: 'weft' })).close();
  const db = new pg.Client({ connectionString: url });
  db.on('error', () => undefined);
  await db.connect();
  const scale = Number(process.env.SCALE ?? 1);
  for (let burst = 0; burst < 3; burst++) {
    await debounceRows(db, 2000 * scale, 'pending', 'd', `b${burst}`, true, false);
    await debounceRows(db, 2000 * scale, 'pending', 's', `b${burst}`, false, true);
    await debounceRows(db, 2000, 'running', 'o', `b${burst}`, false, false);
    await pendingTimers(db);
    await db.query(`UPDATE weft.weft_workflows SET status = 'completed', singleton_key = singleton_wait, singleton_wait = NULL
                    WHERE status IN ('pending', 'running')`);
    await db.query(`DELETE FROM weft.weft_timers`);
    await db.query('ANALYZE weft.weft_workflows, weft.weft_timers');
  }
  await debounceRows(db, 4000 * scale, 'pending', 'd', 'live', true, false);
  await debounceRows(db, 1000 * scale, 'pending', 's', 'live', false, true);
  await debounceRows(db, 50, 'running', 's', 'live', false, false, true);
  await pendingTimers(db);
  // wkey-0's holder ended: its waiters are due to take it.
  await db.query(`UPDATE weft.weft_workflows SET status = 'completed' WHERE id = 'running-s-live-0'`);
  await db.query('SET plan_cache_mode = force_generic_plan');
  const client = {
    query: async (sql: string, params: unknown[] = []) => (await db.query({ name: statementName(sql), text: sql, values: params })).rows,
  } as never;
  const debounce = new WorkflowDebounce(client, 'weft', () => 0);
  const waits = new SingletonWaits(client, 'weft', () => 0);
  const cases: Record<string, () => Promise<unknown>> = {
    // A closed window, not yet fired: the call detaches it and opens the next.
    'debounced call, closed window': async () => {
      await db.query(`UPDATE weft.weft_workflows SET start_at = now() - interval '1 second' WHERE id = 'pending-d-live-7'`);
      return debounce.start({
        id: 'next-window',
        type: 'd',
        input: 1,
        timers: [],
        debounce: { key: 'key-live-7', delayMs: 60_000, maxDelayMs: null },
      } as never);
    },
    'promote, oldest waiter of a free key': () => waits.promote('pending-s-live-50'),
    'promote, a younger waiter of a free key': () => waits.promote(`pending-s-live-${1000 * scale}`),
    'promote, key held': () => waits.promote(`pending-s-live-${1000 * scale - 1}`),
    wakeNext: () => waits.wakeNext('running-s-live-7'),
  };
  const out = await medianRolledBackMs(db, cases);
  process.stdout.write(`${JSON.stringify({ scale, medianMs: out })}\n`);
  await db.end();
});
