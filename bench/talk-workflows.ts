// Workflows of bench/talk-latency.ts, shared by its writer process (bench/talk-writer.ts).
import type { WorkflowContext } from '@weft/nest';

/** A wall clock two processes on one machine share (up to an offset the bench estimates). */
export const wallNow = () => performance.timeOrigin + performance.now();

/** Per 'next' signal: an event and a stream entry, each stamped with the writer's clock just before the call. */
export class Publisher {
  async run(ctx: WorkflowContext, input: { n: number }) {
    for (let i = 0; i < input.n; i++) {
      await ctx.waitForSignal('next');
      await ctx.setEvent(`e${i}`, wallNow());
      await ctx.writeStream('s', wallNow());
    }
  }
}

/** `n` entries from workflow code as fast as it goes (each rides the run's next commit), then the close. */
export class Flood {
  async run(ctx: WorkflowContext, input: { n: number }) {
    await ctx.waitForSignal('go');
    for (let i = 0; i < input.n; i++) await ctx.writeStream('s', i);
    await ctx.closeStream('s');
    return input.n;
  }
}
