import { Client } from 'pg';
import type { WorkflowContext } from '../common/types.js';
import { WeftTestEnvironment } from './environment.js';

class Sleeper {
  async run(ctx: WorkflowContext) {
    await ctx.sleep('30d');
    return 'rested';
  }
}

async function accepts(url: string): Promise<boolean> {
  const c = new Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  try {
    await c.connect();
    return true;
  } catch {
    return false;
  } finally {
    await c.end().catch(() => undefined);
  }
}

describe('WeftTestEnvironment with no database configured', () => {
  it('runs on the embedded server under .weft/test-pg, shared by the open environments and stopped with the last', async () => {
    // This file's own process: the runner's server is not offered to it.
    delete process.env.WEFT_TEST_ADMIN_URL;
    delete process.env.WEFT_TEST_DATABASE_URL;
    const a = await WeftTestEnvironment.create({ workflows: [['sleeper', Sleeper]] });
    const b = await WeftTestEnvironment.create({ workflows: [['sleeper', Sleeper]] });
    expect(new URL(b.databaseUrl).port).toBe(new URL(a.databaseUrl).port);
    expect(b.schema).not.toBe(a.schema);
    const h = await a.start('sleeper', null);
    await a.clock.advance('30d');
    expect(await a.result(h.workflowId)).toBe('rested');
    await a.close();
    expect(await accepts(b.databaseUrl)).toBe(true); // b still uses it
    await b.close();
    expect(await accepts(b.databaseUrl)).toBe(false);
  }, 120_000);
});
