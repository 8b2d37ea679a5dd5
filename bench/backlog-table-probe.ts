// bench/backlog-table-probe (docs/decisions/0024): what a queued workflow's admission costs the
// database, as the row moves today (inserted `enqueued` in weft_workflows, then picked FOR UPDATE
// SKIP LOCKED and updated to `running`: a non-HOT update, the running row's index entries written
// again) against a backlog kept in a table of its own (inserted there, then picked, deleted and
// inserted into weft_workflows as `running`), and a direct start's one insert. 50 rows a
// statement, as an admission batch, one client; rounds of 10 batches of each shape in turn; the
// median per workflow, in µs. What is common to both (the steps, the end) is not run. Not in
// `npm run bench`.
// node --import ./test/support/register-ts.js bench/backlog-table-probe.ts [ROUNDS=30]
import pg from 'pg';
import { openDatabase } from '../libs/weft/src/storage/data-source.js';
import { machine, percentile, round, withFreshDatabase } from './support.js';

const BATCH = 50;
const INPUT = '{"n": 12345}';

await withFreshDatabase(async (url) => {
  await (await openDatabase({ database: { url }, schema: 'weft' })).close();
  const c = new pg.Client({ connectionString: url });
  c.on('error', () => undefined);
  await c.connect();
  try {
    await c.query(`CREATE TABLE weft.backlog (id varchar(255) PRIMARY KEY, type varchar(255) NOT NULL, queue varchar(255) NOT NULL,
      priority int NOT NULL DEFAULT 0, created_at timestamptz NOT NULL DEFAULT now(), input json)`);
    await c.query('CREATE INDEX backlog_queue_idx ON weft.backlog (queue, priority, created_at, id)');
    let seq = 0;
    const ids = () => Array.from({ length: BATCH }, () => `wf-${++seq}-0123456789abcdef0123456789abcdef`);
    const shapes: Record<string, () => Promise<void>> = {
      inPlace: async () => {
        await c.query(
          `INSERT INTO weft.weft_workflows (id, type, status, input, queue, priority)
           SELECT x, 'noop3', 'enqueued', $2::json, 'in-place', 0 FROM unnest($1::text[]) x`,
          [ids(), INPUT],
        );
        await c.query(`WITH p AS (SELECT w.id FROM weft.weft_workflows w WHERE w.queue = 'in-place' AND w.status = 'enqueued' AND w.priority = 0
                                  ORDER BY w.created_at, w.id LIMIT ${BATCH} FOR UPDATE SKIP LOCKED)
          UPDATE weft.weft_workflows w SET status = 'running', admitted_at = clock_timestamp(), updated_at = clock_timestamp(), version = w.version + 1
          FROM p WHERE w.id = p.id RETURNING w.id, w.input`);
      },
      backlogTable: async () => {
        await c.query(`INSERT INTO weft.backlog (id, type, input, queue) SELECT x, 'noop3', $2::json, 'table' FROM unnest($1::text[]) x`, [
          ids(),
          INPUT,
        ]);
        await c.query(`WITH p AS (SELECT b.id FROM weft.backlog b WHERE b.queue = 'table' AND b.priority = 0
                                  ORDER BY b.created_at, b.id LIMIT ${BATCH} FOR UPDATE SKIP LOCKED),
          d AS (DELETE FROM weft.backlog b USING p WHERE b.id = p.id RETURNING b.*)
          INSERT INTO weft.weft_workflows (id, type, status, input, queue, priority, created_at, admitted_at)
          SELECT d.id, d.type, 'running', d.input, d.queue, d.priority, d.created_at, clock_timestamp() FROM d RETURNING id, input`);
      },
      directStart: async () => {
        await c.query(
          `INSERT INTO weft.weft_workflows (id, type, status, input) SELECT x, 'noop3', 'running', $2::json FROM unnest($1::text[]) x`,
          [ids(), INPUT],
        );
      },
    };
    const rounds = Number(process.argv[2] ?? 30);
    const samples: Record<string, number[]> = Object.fromEntries(Object.keys(shapes).map((k) => [k, []]));
    for (let r = 0; r < rounds; r++) {
      for (const [name, run] of Object.entries(shapes)) {
        const t0 = performance.now();
        for (let i = 0; i < 10; i++) await run();
        samples[name]!.push(((performance.now() - t0) * 1000) / (10 * BATCH));
      }
    }
    const usPerWorkflow = Object.fromEntries(
      Object.entries(samples).map(([k, xs]) => [
        k,
        round(
          percentile(
            xs.sort((a, b) => a - b),
            50,
          ),
          1,
        ),
      ]),
    );
    process.stdout.write(
      `${JSON.stringify({ bench: 'backlog-table-probe', at: new Date().toISOString(), machine: machine(), usPerWorkflow }, null, 2)}\n`,
    );
  } finally {
    await c.end();
  }
});
