import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import type { WorkflowContext } from '../common/types.js';
import { WeftTestEnvironment } from '../testing/environment.js';
import { runCli } from './run.js';

class Order {
  async run(ctx: WorkflowContext, id: string) {
    const charge = await ctx.step('charge', () => `ch_${id}`);
    await ctx.sleep('1d');
    await ctx.step('ship', () => 'shipped');
    return charge;
  }
}

/** The workflow module as users would ship it: `v1` as recorded, `v2` with a step renamed. */
const moduleText = (second: string) => `
export const workflows = [['order', class {
  async run(ctx, id) {
    const charge = await ctx.step('charge', () => 'ch_' + id);
    await ctx.sleep('1d');
    await ctx.step('${second}', () => 'shipped');
    return charge;
  }
}]];
`;

async function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const code = await runCli(args, {
    stdout: { write: (t: string) => (stdout += t) },
    stderr: { write: (t: string) => (stderr += t) },
    stdin: new PassThrough(),
    env: {},
  });
  return { code, stdout, stderr };
}

describe('weft replay-check', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'weft-replay-check-'));
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  beforeAll(async () => {
    const env = await WeftTestEnvironment.create({ workflows: [['order', Order]] });
    try {
      const done = await env.start('order', 'o-1');
      const parked = await env.start('order', 'o-2', { startAfter: '1h' });
      await env.clock.advance('1d');
      // One finished run and one parked in its sleep, as `describe` exports them.
      const exports = [await env.describe(done.workflowId), await env.describe(parked.workflowId)];
      fs.mkdirSync(path.join(dir, 'histories'));
      fs.writeFileSync(path.join(dir, 'histories', 'runs.json'), JSON.stringify(exports));
      fs.writeFileSync(path.join(dir, 'v1.mjs'), moduleText('ship'));
      fs.writeFileSync(path.join(dir, 'v2.mjs'), moduleText('dispatch'));
    } finally {
      await env.close();
    }
  });

  it('exits 0 when the current code replays every exported history', async () => {
    const r = await cli(['replay-check', path.join(dir, 'histories'), '--workflows', path.join(dir, 'v1.mjs')]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('2 run(s) replay on the current code');
  });

  it('exits 1 at the first divergence and names it', async () => {
    const r = await cli(['replay-check', path.join(dir, 'histories', 'runs.json'), '--workflows', path.join(dir, 'v2.mjs'), '--json']);
    expect(r.code).toBe(1);
    const out = JSON.parse(r.stdout) as { ok: boolean; reports: Array<{ ok: boolean; error?: { name: string; message: string } }> };
    expect(out.ok).toBe(false);
    const failed = out.reports.find((x) => !x.ok)!;
    expect(failed.error?.name).toBe('NonDeterminismError');
    expect(failed.error?.message).toMatch(/dispatch|ship/);
  });

  it('is bad usage (exit 2) without --workflows or with a file that is not an export', async () => {
    expect((await cli(['replay-check', path.join(dir, 'histories')])).code).toBe(2);
    fs.writeFileSync(path.join(dir, 'bad.json'), '{"nope": 1}');
    expect((await cli(['replay-check', path.join(dir, 'bad.json'), '--workflows', path.join(dir, 'v1.mjs')])).code).toBe(2);
  });
});
