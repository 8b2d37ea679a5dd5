import { Client } from 'pg';
import { adminUrl } from '../../../../test/support/database.js';
import { quietLogger, useTestEngines, waitFor } from '../../../../test/support/engine.js';
import type { WorkflowContext } from '../common/types.js';

const bodies: Record<string, number> = {};
const bump = (k: string) => (bodies[k] = (bodies[k] ?? 0) + 1);
const gates = new Map<string, () => void>();
const delay = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A step that waits for the test, then another step. */
class Gated {
  async run(ctx: WorkflowContext, input: { key: string }) {
    const a = await ctx.step('a', () => {
      bump(`${input.key}:a`);
      return new Promise<number>((resolve) => gates.set(input.key, () => resolve(1)));
    });
    const b = await ctx.step('b', () => {
      bump(`${input.key}:b`);
      return 2;
    });
    return a + b;
  }
}

/** A charge, then a wait during which an update may be delivered. */
class Charge {
  private changed = false;
  async run(ctx: WorkflowContext, input: { key: string }) {
    await ctx.step('charge', async () => {
      bump(`${input.key}:charge`);
      await delay(400);
      return 'charged';
    });
    const changed = await ctx.condition(() => this.changed, { timeout: '300ms' });
    return { changed };
  }
  onChange(): string {
    this.changed = true;
    return 'ok';
  }
}

describe('a finished step is never run again because its commit failed (real PostgreSQL)', () => {
  const env = useTestEngines();
  const register = (e: import('./engine.js').WeftEngine) =>
    e.register('gated', Gated).register({ name: 'charge', factory: () => new Charge(), updateHandlers: { change: 'onChange' } });

  /** Cuts the test database off: no new connections, every open one terminated; returns the way back. */
  async function databaseOutage(): Promise<() => Promise<void>> {
    const admin = new Client({ connectionString: adminUrl() });
    await admin.connect();
    const name = env.tdb.name;
    await admin.query(`ALTER DATABASE "${name}" ALLOW_CONNECTIONS false`);
    await admin.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()`, [name]);
    return async () => {
      await admin.query(`ALTER DATABASE "${name}" ALLOW_CONNECTIONS true`);
      await admin.end();
    };
  }

  it.each([
    ['none', {}],
    [
      'workflow-lease',
      { ownership: 'workflow-lease' as const, workflowClaimTtl: '6s' as const, workflowClaimRenewInterval: '2s' as const },
    ],
  ])('across a database outage shorter than the TTL (%s): the result is committed again, the body runs once', async (mode, opts) => {
    const logger = quietLogger();
    const e = await env.pool.create({ ...opts, logger }, register);
    await e.bootstrap();
    const key = `outage-${mode}`;
    const h = await e.start('gated', { key });
    await waitFor(() => gates.has(key), 'step a running');
    const restore = await databaseOutage();
    try {
      gates.get(key)!(); // the body finishes while the database is away
      await waitFor(() => logger.lines.some((l) => l.includes(`Commit for workflow "${h.workflowId}" failed`)), 'a failed commit', 10_000);
      await delay(300);
    } finally {
      await restore();
    }
    await expect(h.result({ timeout: '15s' })).resolves.toBe(3);
    expect(bodies[`${key}:a`]).toBe(1);
    expect(bodies[`${key}:b`]).toBe(1);
  });

  it('a graceful stop right after an outage commits the results held for re-sending within its grace period', async () => {
    // The commit of a body that finished during the outage is re-sent with jittered backoff; when
    // the database is back, a run's next try may be seconds away. A graceful stop must not wait
    // for it: its grace would run out and the result be lost, and the next owner would run the body
    // again. Twenty runs, so that the test does not hang on one run's jitter.
    const logger = quietLogger();
    const e = await env.pool.create({ logger, shutdownGracePeriod: '1s' }, register);
    await e.bootstrap();
    const keys = Array.from({ length: 20 }, (_, i) => `outage-then-stop-${i}`);
    const ids = await Promise.all(keys.map(async (key) => (await e.start('gated', { key })).workflowId));
    await waitFor(() => keys.every((k) => gates.has(k)), 'every step a running');
    const restore = await databaseOutage();
    try {
      for (const k of keys) gates.get(k)!();
      await waitFor(
        () => logger.lines.filter((l) => l.includes('failed') && l.includes('sending it again')).length >= keys.length,
        'failed commits',
        10_000,
      );
      await delay(5_000); // long enough that the backoff between tries has grown past the grace period
    } finally {
      await restore();
    }
    await e.dispose();
    const rows = await env.tdb.query<{ workflow_id: string }>(
      `SELECT workflow_id FROM weft.weft_operations WHERE workflow_id = ANY($1) AND kind = 'step' AND name = 'a'`,
      [ids],
    );
    expect(rows.length).toBe(ids.length);
  });

  it('an update whose caller gave up does not cost the step result committed with its delivery', async () => {
    const e = await env.pool.create({}, register);
    await e.bootstrap();
    const h = await e.start('charge', { key: 'upd' });
    await waitFor(() => bodies['upd:charge'], 'the charge running');
    // The request reaches the inbox while the step runs; its caller gives up before delivery.
    await expect(h.update('change', null, { timeout: '100ms' })).rejects.toMatchObject({ code: 'WEFT_UPDATE_TIMEOUT' });
    await expect(h.result({ timeout: '10s' })).resolves.toEqual({ changed: false });
    expect(bodies['upd:charge']).toBe(1);
    const msgs = await env.tdb.query<{ status: string }>(`SELECT status FROM weft.weft_messages WHERE workflow_id = $1`, [h.workflowId]);
    expect(msgs).toEqual([{ status: 'expired' }]);
  });
});
