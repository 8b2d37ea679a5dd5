// bench/running-analyze-probe (docs/decisions/0056): the calls that read running workflows, timed
// after an ANALYZE that saw none. Three bursts of 6,000 x SCALE workflows run and end, vacuumed and
// analyzed each time, then 1,000 enqueued per queue, 140 running in the queues, 1,000 x SCALE
// running of another type and 100 waiting signals; each call in a transaction rolled back, generic
// plans, median of 25 in ms. Not in `npm run bench`. Alternate it with main's checkout to compare.
// SCALE=5 node --import ./test/support/register-ts.js bench/running-analyze-probe.ts
import pg from 'pg';
import { openDatabase } from '../libs/weft/src/storage/data-source.js';
import { MessageRepository } from '../libs/weft/src/storage/repositories/message.repository.js';
import { QueueRepository } from '../libs/weft/src/storage/repositories/queue.repository.js';
import { AdvanceStatements } from '../libs/weft/src/storage/repositories/advance-statements.js';
import { statementName } from '../libs/weft/src/storage/sql-client.js';
import { endsHandingOff } from '../test/support/plans.js';
import { medianRolledBackMs, withFreshDatabase } from './support.js';

await withFreshDatabase(async (url) => {
  await (await openDatabase({ database: { url }, schema: 'weft' })).close();
  const db = new pg.Client({ connectionString: url });
  db.on('error', () => undefined);
  await db.connect();
  const insert = (n: number, status: string, queue: string | null, keyed: boolean, type = 't') =>
    db.query(
      `INSERT INTO weft.weft_workflows (id, type, status, input, version, queue, partition_key, created_at)
       SELECT $2 || '-' || coalesce($3, 'none') || '-' || $5 || '-' || g, $5, $2, 'null', 1, $3,
              CASE WHEN $4 THEN 'tenant-' || (g % 100) END, now() + (g || ' milliseconds')::interval
       FROM generate_series(1, $1::int) g`,
      [n, status, queue, keyed, type],
    );
  const scale = Number(process.env.SCALE ?? 1);
  for (let burst = 0; burst < 3; burst++) {
    await insert(2000 * scale, 'running', 'parts', true);
    await insert(2000 * scale, 'running', 'plain', false);
    await insert(2000 * scale, 'running', null, false, 'other');
    await db.query(`UPDATE weft.weft_workflows SET status = 'completed', id = $1 || id WHERE status = 'running'`, [`done${burst}-`]);
    // Each took a signal on its way.
    await db.query(
      `INSERT INTO weft.weft_messages (workflow_id, kind, name, consumed_seq, status)
       SELECT id, 'signal', 's', 0, 'consumed' FROM weft.weft_workflows WHERE id LIKE $1`,
      [`done${burst}-%`],
    );
    await db.query('VACUUM ANALYZE weft.weft_workflows, weft.weft_messages');
  }
  await insert(1000, 'enqueued', 'parts', true);
  await insert(1000, 'enqueued', 'plain', false);
  await insert(100, 'running', 'parts', true);
  await insert(40, 'running', 'plain', false);
  await insert(1000 * scale, 'running', null, false, 'other');
  await db.query(`INSERT INTO weft.weft_messages (workflow_id, kind, name) SELECT 'running-none-other-' || g, 'signal', 's'
                  FROM generate_series(1, 1000, 10) g`);
  let pollText = '';
  await new MessageRepository({ manager: {}, query: async (sql: string) => ((pollText = sql), []) } as never, 'weft').poll(
    null,
    ['other'],
    100,
  );
  const ends = endsHandingOff(Array.from({ length: 20 }, (_, i) => `running-plain-t-${i + 1}`));
  const admit = (queue: string, partitioned: boolean) =>
    db.query(
      `SELECT * FROM weft.weft_queue_admit($1, 50, 200, NULL, NULL, NULL, 0, ARRAY['t'], NULL, NULL, NULL, NULL, NULL, $2, $3, NULL, 0)`,
      [queue, partitioned, partitioned ? 2 : null],
    );
  let gaugesText = '';
  await new QueueRepository({ manager: {}, query: async (sql: string) => ((gaugesText = sql), []) } as never, 'weft').stats([]);
  await db.query('SET plan_cache_mode = force_generic_plan');
  const cases: Record<string, () => Promise<unknown>> = {
    'admission, partitioned': () => admit('parts', true),
    'admission, plain': () => admit('plain', false),
    gauges: () => db.query({ name: 'gauges', text: gaugesText, values: [['parts', 'plain'], 10000] }),
    poll: () => db.query({ name: 'poll', text: pollText, values: [['other', 't'], 100] }),
    'end commit, 20 with hand-off': () => db.query(ends),
  };
  // Consumption by a batch of three, once 5,000 messages wait (measured last: the poll's 100 are above).
  const consume = async () => {
    const waiting = await db.query<{ id: string; workflow_id: string }>(
      `SELECT min(id)::text AS id, workflow_id FROM weft.weft_messages
       WHERE workflow_id IN ('running-none-other-1', 'running-none-other-11', 'running-none-other-21') GROUP BY workflow_id`,
    );
    const op = { seq: 0, kind: 'waitForSignal' as const, name: 's', status: 'completed' as const, result: 1 };
    const batch = waiting.rows.map((m) => ({
      workflowId: m.workflow_id,
      expectedVersion: 1,
      operations: [op],
      consume: [{ id: m.id, seq: 0 }],
    }));
    const { sql, params } = new AdvanceStatements('weft', () => 0).for(batch);
    return () => db.query({ name: statementName(sql), text: sql, values: params });
  };
  const setups: Record<string, () => Promise<() => Promise<unknown>>> = {
    'consumption, batch of 3, 5,000 waiting': async () => {
      await db.query(`INSERT INTO weft.weft_messages (workflow_id, kind, name)
                      SELECT 'running-none-other-' || (g % 1000 + 1), 'signal', 's' FROM generate_series(1, 4900) g`);
      return consume();
    },
  };
  const out = await medianRolledBackMs(db, cases, setups);
  process.stdout.write(`${JSON.stringify({ scale, medianMs: out })}\n`);
  await db.end();
});
