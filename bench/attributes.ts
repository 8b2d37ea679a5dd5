// bench/attributes: the two targets of issue #40. Prints one JSON object on stdout.
// node --expose-gc --enable-source-maps --import ./test/support/register-ts.js bench/attributes.ts [ROWS] [WORKFLOWS]
//
// 1. list by attribute on ROWS workflows (default 1,000,000, written by set-based SQL with
//    attributes { tenant: 1 of 1,000, amount }, a quarter failed, then VACUUM ANALYZE): engine.list
//    timed (median and p95 of 30 calls) for an equality, an equality with a status and newest
//    first, the text form (`tenant=42`, number or text), and an equality with a range; with the
//    index each plan uses.
// 2. the hot path (three no-op steps at 16 in flight) with attributes set at start against none, in
//    alternating chunks on one engine and one database (the machine's drift hits both alike), after
//    a warm-up of one chunk each: the median over chunks of the paired ratio (with ÷ without, the
//    two halves of one chunk), and the ratio of the sums beside it.
import { WeftEngine } from '@weft/nest';
import pg from 'pg';
import { listStatement } from '../libs/weft/src/storage/repositories/workflow-list.js';
import { attributeQuery, parseWhere } from '../libs/weft/src/engine/attribute-filter.js';
import type { ListFilter } from '../libs/weft/src/common/types.js';
import { machine, percentile, round, silent, ThreeNoops, withFreshDatabase } from './support.js';

const ROWS = Number(process.argv[2] ?? 1_000_000);
const WORKFLOWS = Number(process.argv[3] ?? 2000);
const CHUNKS = Number(process.env.BENCH_ATTRIBUTE_CHUNKS ?? 10);
const IN_FLIGHT = 16;
const log = (m: string) => process.stderr.write(`[attributes] ${m}\n`);

const FILTERS: Record<string, ListFilter> = {
  equality: { attributes: { tenant: 40 } },
  'equality, failed, newest first': { attributes: { tenant: 40 }, status: 'failed', order: 'newest' },
  'text form tenant=40': { attributes: parseWhere(['tenant=40']) },
  'equality and range amount>5000': { attributes: parseWhere(['tenant=40', 'amount>5000']) },
};

async function listTimes(engine: WeftEngine, url: string) {
  const probe = new pg.Client({ connectionString: url });
  probe.on('error', () => undefined);
  await probe.connect();
  const out: Record<string, unknown> = {};
  try {
    for (const [name, filter] of Object.entries(FILTERS)) {
      const times: number[] = [];
      let items = 0;
      for (let i = 0; i < 30; i++) {
        const t0 = performance.now();
        items = (await engine.list({ ...filter, limit: 100 })).items.length;
        times.push(performance.now() - t0);
      }
      times.sort((a, b) => a - b);
      const { sql, params } = listStatement('weft', {
        attributes: attributeQuery(filter.attributes),
        statuses: filter.status ? [filter.status as never] : undefined,
        newest: filter.order === 'newest',
        limit: 101,
      });
      const plan = (await probe.query(`EXPLAIN (FORMAT JSON) ${sql}`, params)).rows[0]['QUERY PLAN'][0].Plan;
      const indexes: string[] = [];
      const walk = (n: { 'Index Name'?: string; Plans?: unknown[] }) => {
        if (n['Index Name']) indexes.push(n['Index Name']);
        for (const c of n.Plans ?? []) walk(c as never);
      };
      walk(plan);
      out[name] = { items, medianMs: round(percentile(times, 50)), p95Ms: round(percentile(times, 95)), indexes };
      log(`${name}: ${JSON.stringify(out[name])}`);
    }
  } finally {
    await probe.end();
  }
  return out;
}

async function chunk(engine: WeftEngine, total: number, attributes: boolean): Promise<number> {
  let next = 0;
  const t0 = performance.now();
  const worker = async () => {
    while (next < total) {
      const n = next++;
      const opts = attributes ? { attributes: { tenant: n % 1000, amount: n } } : {};
      await (await engine.start('three-noops', { n }, opts)).result();
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
  return total / ((performance.now() - t0) / 1000);
}

await withFreshDatabase(async (url) => {
  const engine = await WeftEngine.create({ database: { url, poolSize: 20 }, schema: 'weft', logger: silent, shutdownGracePeriod: 0 });
  engine.register('three-noops', ThreeNoops);
  await engine.bootstrap();
  const fill = new pg.Client({ connectionString: url });
  fill.on('error', () => undefined);
  await fill.connect();
  const t0 = performance.now();
  for (let from = 1; from <= ROWS; from += 200_000) {
    const to = Math.min(ROWS, from + 199_999);
    await fill.query(`INSERT INTO weft.weft_workflows (id, type, status, input, version, attributes, created_at, completed_at)
                      SELECT 'fill-' || lpad(g::text, 8, '0'), 'order', CASE WHEN g % 4 = 0 THEN 'failed' ELSE 'completed' END, 'null', 4,
                             jsonb_build_object('tenant', g % 1000, 'amount', g % 10000),
                             now() - ((${ROWS} - g) || ' milliseconds')::interval, now()
                      FROM generate_series(${from}, ${to}) g`);
  }
  await fill.query('VACUUM ANALYZE weft.weft_workflows');
  await fill.end();
  const fillSeconds = round((performance.now() - t0) / 1000, 1);
  log(`filled ${ROWS} rows in ${fillSeconds} s`);
  const list = await listTimes(engine, url);

  const rates: Record<'with' | 'without', number[]> = { with: [], without: [] };
  // A full chunk each: with only 200, the first measured chunk still carried the JIT's and the
  // plan cache's warm-up of the attributes' path (0.66 there against 0.976 for the next five).
  await chunk(engine, WORKFLOWS, true);
  await chunk(engine, WORKFLOWS, false);
  for (let i = 0; i < CHUNKS; i++) {
    // Alternating, each first in turn: with, without, without, with, ...
    const order: Array<'with' | 'without'> = i % 2 ? ['without', 'with'] : ['with', 'without'];
    for (const which of order) rates[which].push(await chunk(engine, WORKFLOWS, which === 'with'));
    log(`chunk ${i}: with ${round(rates.with.at(-1)!)} /s, without ${round(rates.without.at(-1)!)} /s`);
  }
  const sum = (a: number[]) => a.reduce((x, y) => x + y, 0);
  const paired = rates.with.map((w, i) => w / rates.without[i]!).sort((a, b) => a - b);
  await engine.dispose();
  process.stdout.write(
    `${JSON.stringify({
      bench: 'attributes',
      machine: machine(),
      rows: ROWS,
      fillSeconds,
      list,
      hotPath: {
        inFlight: IN_FLIGHT,
        workflowsPerChunk: WORKFLOWS,
        chunks: CHUNKS,
        withAttributesPerSecond: round(sum(rates.with) / rates.with.length),
        withoutPerSecond: round(sum(rates.without) / rates.without.length),
        ratio: round((paired[(paired.length - 1) >> 1]! + paired[paired.length >> 1]!) / 2, 3),
        ratioOfSums: round(sum(rates.with) / sum(rates.without), 3),
        chunkRatios: paired.map((r) => round(r, 3)),
      },
    })}\n`,
  );
});
