// bench/talk-latency: how soon a reader on another engine sees what workflow code publishes
// (#37, docs/events-and-streams.md), beside a bare NOTIFY round trip measured in the same run.
// node --import ./test/support/register-ts.js bench/talk-latency.ts [trials=300]
//
// One process, two engines on one database: A runs the workflow, B reads. Per trial the workflow
// stamps the value with this process's clock just before ctx.setEvent / ctx.writeStream; B's
// getEvent / readStream takes its clock when the value reaches it. So each figure is the run's
// commit (its round trip, group commit included) plus the NOTIFY's delivery plus B's read. The
// bare NOTIFY figure: pg_notify on one connection until LISTEN on another hears it.
// Ownership 'workflow-lease': under 'none' the reader engine would also try to drive the workflow
// on every signal (it holds everything), loading its growing history each time (p50 13 ms then).
// Not measured here: across two processes (the same path, plus the other process's event loop).
import { Client } from 'pg';
import { WeftEngine, type WorkflowContext } from '@weft/nest';
import { machine, percentile, round, silent, withFreshDatabase } from './support.js';

const trials = Number(process.argv[2] ?? 300);
const now = () => performance.timeOrigin + performance.now();

class Publisher {
  async run(ctx: WorkflowContext, input: { n: number }) {
    for (let i = 0; i < input.n; i++) {
      await ctx.waitForSignal('next');
      await ctx.setEvent(`e${i}`, now());
      await ctx.writeStream('s', now());
    }
  }
}

const stats = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return { p50: round(percentile(s, 50), 3), p99: round(percentile(s, 99), 3), max: round(s[s.length - 1], 3) };
};

async function bareNotify(url: string, n: number): Promise<number[]> {
  const [tx, rx] = [new Client({ connectionString: url }), new Client({ connectionString: url })];
  await Promise.all([tx.connect(), rx.connect()]);
  await rx.query('LISTEN bench_talk');
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const heard = new Promise<number>((r) => rx.once('notification', () => r(now())));
    const t0 = now();
    await tx.query(`SELECT pg_notify('bench_talk', 'x')`);
    out.push((await heard) - t0);
  }
  await Promise.all([tx.end(), rx.end()]);
  return out;
}

const result = await withFreshDatabase(async (url) => {
  const make = () =>
    WeftEngine.create({
      database: { url, poolSize: 10 },
      schema: 'weft',
      logger: silent,
      shutdownGracePeriod: 0,
      ownership: 'workflow-lease',
    });
  const a = await make();
  a.register('publisher', Publisher);
  await a.bootstrap();
  const b = await make();
  await b.bootstrap();
  try {
    const notify = await bareNotify(url, trials);
    const h = await a.start('publisher', { n: trials }, { workflowId: 'talk-bench' });
    const stream = b.readStream(h.workflowId, 's')[Symbol.asyncIterator]();
    const event: number[] = [];
    const entry: number[] = [];
    for (let i = 0; i < trials; i++) {
      const got = b.getEvent<number>(h.workflowId, `e${i}`, { timeout: '10s' }).then((v) => now() - (v as number));
      const next = stream.next().then((r) => now() - (r.value as { value: number }).value);
      await a.signal(h.workflowId, 'next');
      event.push(await got);
      entry.push(await next);
    }
    await stream.return?.(undefined);
    const bare = stats(notify);
    const ev = stats(event);
    const st = stats(entry);
    return {
      trials,
      bareNotifyMs: bare,
      getEventWakeMs: ev,
      streamWriteToReadMs: st,
      ratioToBareNotify: { getEventP50: round(ev.p50 / bare.p50, 2), streamP50: round(st.p50 / bare.p50, 2) },
    };
  } finally {
    await Promise.all([a.dispose(), b.dispose()]);
  }
});
console.log(JSON.stringify({ bench: 'talk-latency', machine: machine(), ...result }, null, 2));
