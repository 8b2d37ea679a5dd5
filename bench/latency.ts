// bench/latency: where one workflow's time goes at 1 in flight, both ownership modes, 3 no-op
// steps. Every statement the engine sends is timed from pg's `Client.query` to its reply, so a
// workflow's p50 splits into its four round trips and the Node time between them. In the same
// window, from the same process, three reference statements are timed on a bare connection: a
// one-row INSERT (what the ceiling commits), the step's two row writes as a plain statement (an
// UPDATE of the workflow row and an INSERT of its operation), and the statement the engine sends
// for a step's record (built as WorkflowRepository.advanceMany builds it), on copies of the
// engine's tables. Prints JSON.
// node --import ./test/support/register-ts.js bench/latency.ts [N]
//   BENCH_WARMUP (workflows per engine before measuring, default 3,000), BENCH_CHUNKS (default 4)
import { WeftEngine } from '@weft/nest';
import pg from 'pg';
import { AdvanceStatements } from '../libs/weft/src/storage/repositories/advance-statements.js';
import type { AdvanceCommand } from '../libs/weft/src/storage/types.js';
import { machine, percentile, round, silent, ThreeNoops, withFreshDatabase } from './support.js';

type Mode = 'none' | 'workflow-lease';

interface Sent {
  db: string;
  sentAt: number;
  backAt?: number;
}

/** Every statement the engines send, while `recording` (bench-only hook on pg's Client.query). */
let recording: Sent[] | undefined;
const proto = pg.Client.prototype as unknown as { query: (...args: unknown[]) => unknown };
const original = proto.query;
proto.query = function (this: { connectionParameters?: { database?: string } }, ...args: unknown[]) {
  const config = args[0] as { text?: string } | string;
  const result = original.apply(this, args);
  const into = recording;
  if (into && typeof config === 'object' && typeof config.text === 'string' && result instanceof Promise) {
    const sent: Sent = { db: this.connectionParameters?.database ?? '?', sentAt: performance.now() };
    into.push(sent);
    result.then(
      () => void (sent.backAt = performance.now()),
      () => undefined,
    );
  }
  return result;
};

interface Target {
  mode: Mode;
  db: string;
  engine: WeftEngine;
  /** A bare connection to the same database, for the reference statements. */
  ref: pg.Client;
  version: number;
  seq: number;
}

interface Samples {
  total: number[];
  roundTrips: number[];
  between: number[];
  edges: number[];
  bareInsert: number[];
  plainStep: number[];
  engineStep: number[];
}

const emptySamples = (): Samples => ({
  total: [],
  roundTrips: [],
  between: [],
  edges: [],
  bareInsert: [],
  plainStep: [],
  engineStep: [],
});

const REF_ID = 'latency-ref';
const REF_EPOCH = '1';
/** The engine's advance statements, aimed at the copies of its tables. */
const refStatements = new AdvanceStatements('ref');

/** Copies of the engine's workflow and operation tables (indexes, the foreign key), one workflow row, and a one-column table. */
async function openReference(t: Target): Promise<void> {
  const c = t.ref;
  await c.query('CREATE SCHEMA ref');
  await c.query('CREATE TABLE ref.weft_workflows (LIKE weft.weft_workflows INCLUDING ALL)');
  await c.query('CREATE TABLE ref.weft_operations (LIKE weft.weft_operations INCLUDING ALL)');
  const fk = await c.query<{ def: string }>(
    `SELECT pg_get_constraintdef(oid) AS def FROM pg_constraint WHERE conrelid = 'weft.weft_operations'::regclass AND contype = 'f'`,
  );
  for (const { def } of fk.rows)
    await c.query(`ALTER TABLE ref.weft_operations ADD ${def.replace(/REFERENCES \S+?\(/, 'REFERENCES ref.weft_workflows(')}`);
  await c.query('CREATE TABLE ref.bare (id bigserial PRIMARY KEY, v int)');
}

/** The reference workflow row: a copy of one of the engine's (ended) workflows, running again at version 1, with no history. */
async function resetReference(t: Target, fromId: string): Promise<void> {
  await t.ref.query('TRUNCATE ref.weft_operations, ref.weft_workflows');
  await t.ref.query(`INSERT INTO ref.weft_workflows SELECT * FROM weft.weft_workflows WHERE id = $1`, [fromId]);
  // A running workflow; under workflow-lease fenced at REF_EPOCH (its terminal commit cleared the fence).
  const epoch = t.mode === 'workflow-lease' ? REF_EPOCH : null;
  await t.ref.query(
    `UPDATE ref.weft_workflows SET id = $1, status = 'running', completed_at = NULL, output = NULL, version = 1, fence_epoch = $3 WHERE id = $2`,
    [REF_ID, fromId, epoch],
  );
  t.version = 1;
  t.seq = 0;
}

async function timed(fn: () => Promise<unknown>): Promise<number> {
  const s = performance.now();
  await fn();
  return performance.now() - s;
}

/** The three reference statements, once each, on the bare connection. */
async function referenceRound(t: Target, s: Samples): Promise<void> {
  const c = t.ref;
  s.bareInsert.push(await timed(() => c.query({ name: 'ref_bare', text: 'INSERT INTO ref.bare (v) VALUES ($1)', values: [1] })));
  const plain = `WITH u AS (
      UPDATE ref.weft_workflows SET version = version + 1, updated_at = clock_timestamp() WHERE id = $1 AND version = $2 RETURNING id, version),
    i AS (
      INSERT INTO ref.weft_operations (workflow_id, seq, kind, name, status, result, attempts, started_at, event)
      SELECT u.id, $3, 'step', 'b', 'completed', $4::json, 1, $5, $3 FROM u)
    SELECT id, version FROM u`;
  const seq = t.seq++;
  const plainMs = await timed(async () => {
    const r = await c.query({ name: 'ref_plain', text: plain, values: [REF_ID, t.version, seq, '2', new Date().toISOString()] });
    if (r.rowCount !== 1) throw new Error('the plain reference statement wrote nothing');
  });
  s.plainStep.push(plainMs);
  t.version++;
  // The engine's statement for a step's record, as WorkflowRepository.advanceMany picks and builds it.
  const command: AdvanceCommand = {
    workflowId: REF_ID,
    expectedVersion: t.version,
    operations: [
      { seq: t.seq++, kind: 'step', name: 'b', status: 'completed', result: 2, startedAt: new Date().toISOString(), event: seq },
    ],
    ...(t.mode === 'workflow-lease' ? { fence: { engineId: 'bench', epoch: REF_EPOCH } } : {}),
  };
  const { sql: text, params: values } = refStatements.for([command]);
  const engineMs = await timed(async () => {
    const r = await c.query<{ version: number | null }>({ name: 'ref_engine', text, values });
    if (r.rows[0]?.version == null) throw new Error('the engine statement was refused on the reference row');
  });
  s.engineStep.push(engineMs);
  t.version++;
}

/** One workflow at a time, each followed by one reference round; adds what it measured to `s`. */
async function runChunk(t: Target, n: number, s: Samples): Promise<void> {
  for (let i = 0; i < n; i++) {
    const sent: Sent[] = [];
    recording = sent;
    const t0 = performance.now();
    const h = await t.engine.start('noop3', { n: i });
    await h.result({ timeout: '60s' });
    const t1 = performance.now();
    recording = undefined;
    s.total.push(t1 - t0);
    // The workflow's own statements: those on the engine's database (not the other engine's loops).
    const own = sent.filter((x) => x.db === t.db && x.backAt !== undefined);
    if (own.length === 4 && own.every((x) => x.sentAt >= t0 && x.backAt! <= t1)) {
      let trips = 0;
      let between = 0;
      own.forEach((x, k) => {
        trips += x.backAt! - x.sentAt;
        if (k > 0) between += x.sentAt - own[k - 1].backAt!;
      });
      s.roundTrips.push(trips);
      s.between.push(between);
      s.edges.push(own[0].sentAt - t0 + (t1 - own[3].backAt!));
    }
    await referenceRound(t, s);
  }
}

/** Warms the engine up, and the reference statements on a copy of one of its workflows. */
async function warmUp(t: Target, n: number): Promise<void> {
  let last = '';
  for (let i = 0; i < n; i++) {
    const h = await t.engine.start('noop3', { n: i });
    await h.result({ timeout: '60s' });
    last = h.workflowId;
  }
  await resetReference(t, last);
  // The bare connection's statements get prepared and planned before the figures count.
  const scratch = emptySamples();
  for (let i = 0; i < 200; i++) await referenceRound(t, scratch);
}

async function withTarget<T>(mode: Mode, fn: (t: Target) => Promise<T>): Promise<T> {
  return withFreshDatabase(async (url, db) => {
    const engine = await WeftEngine.create({ database: { url, poolSize: 20 }, schema: 'weft', logger: silent, ownership: mode });
    engine.register('noop3', ThreeNoops);
    await engine.bootstrap();
    const ref = new pg.Client({ connectionString: url });
    ref.on('error', () => undefined); // the database is dropped under it at the end
    await ref.connect();
    try {
      const t: Target = { mode, db, engine, ref, version: 1, seq: 0 };
      await openReference(t);
      return await fn(t);
    } finally {
      await ref.end();
      await engine.dispose();
    }
  });
}

const p50 = (xs: number[]) =>
  round(
    percentile(
      [...xs].sort((a, b) => a - b),
      50,
    ),
    3,
  );

function summary(t: Target, s: Samples) {
  const bare = p50(s.bareInsert);
  const p = p50(s.total);
  return {
    mode: t.mode,
    workflows: s.total.length,
    p50Ms: p,
    // The split of a workflow's time, from the workflows whose four statements were all timed.
    workflowsSplit: s.roundTrips.length,
    fourRoundTripsMs: p50(s.roundTrips),
    nodeBetweenMs: p50(s.between),
    edgesMs: p50(s.edges),
    // Reference round trips on a bare connection in the same window.
    bareInsertMs: bare,
    plainStepWritesMs: p50(s.plainStep),
    engineStepRecordMs: p50(s.engineStep),
    p50OverFourBareInserts: round(p / (4 * bare), 2),
  };
}

async function main() {
  const total = Number(process.argv[2] ?? 1000);
  const warm = Number(process.env.BENCH_WARMUP ?? 3000);
  const chunks = Math.max(1, Number(process.env.BENCH_CHUNKS ?? 4));
  const modes: Mode[] = ['none', 'workflow-lease'];
  const results = await withTarget(modes[0], (a) =>
    withTarget(modes[1], async (b) => {
      const targets = [a, b];
      for (const t of targets) await warmUp(t, warm);
      const samples = targets.map(emptySamples);
      const per = Math.max(1, Math.floor(total / chunks));
      for (let c = 0; c < chunks; c++) {
        // Alternate which mode goes first, so that the machine's drift hits both alike.
        const order = c % 2 === 0 ? [0, 1] : [1, 0];
        for (const i of order) await runChunk(targets[i], per, samples[i]);
      }
      return targets.map((t, i) => summary(t, samples[i]));
    }),
  );
  process.stdout.write(`${JSON.stringify({ bench: 'latency', at: new Date().toISOString(), machine: machine(), results }, null, 2)}\n`);
}

main().catch((err) => {
  process.stderr.write(`${(err as Error).stack}\n`);
  process.exit(1);
});
