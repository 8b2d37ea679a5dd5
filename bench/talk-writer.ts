// The writer process of bench/talk-latency.ts (the across-two-processes figures): an engine that
// owns workflow TALK_ID ('publisher', bench/talk-workflows.ts), started here. Env: DATABASE_URL,
// TALK_ID, TALK_TRIALS. Prints {"event":"ready"} once the workflow is started; a line on stdin is
// answered with {"event":"clock","at":<this process's wall clock, ms>} (the offset estimate);
// stdin's end disposes the engine and exits.
import { WeftEngine } from '@weft/nest';
import { Publisher } from './talk-workflows.js';
import { silent } from './support.js';

const out = (e: Record<string, unknown>) => process.stdout.write(`${JSON.stringify(e)}\n`);

const engine = await WeftEngine.create({
  database: { url: process.env.DATABASE_URL!, poolSize: 10 },
  schema: 'weft',
  logger: silent,
  shutdownGracePeriod: 0,
  ownership: 'workflow-lease',
});
engine.register('publisher', Publisher);
await engine.bootstrap();
await engine.start('publisher', { n: Number(process.env.TALK_TRIALS) }, { workflowId: process.env.TALK_ID! });
process.stdin.setEncoding('utf8');
process.stdin.on('data', (d: string) => {
  for (let i = 0; i < d.split('\n').length - 1; i++) out({ event: 'clock', at: performance.timeOrigin + performance.now() });
});
process.stdin.on('end', () => void engine.dispose().then(() => process.exit(0)));
out({ event: 'ready' });
