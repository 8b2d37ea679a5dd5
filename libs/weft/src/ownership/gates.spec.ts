import { useTestEngines, waitFor } from '../../../../test/support/engine.js';
import type { WorkflowContext } from '../common/types.js';
import type { WeftEngine } from '../engine/engine.js';
import type { WeftEngineOptions } from '../engine/options.js';
import { OwnershipModeMismatchError } from '../common/errors.js';
import { openDatabase } from '../storage/data-source.js';
import type { OwnershipMode } from './config.js';
import { runOwnershipGates } from './gates.js';

const stuck = new Set<string>();

/** Records one step, then runs a step that only ends when its engine aborts it. */
class Stuck {
  async run(ctx: WorkflowContext) {
    await ctx.step('before', () => 'ok');
    await ctx.step('stuck', ({ signal }) => {
      stuck.add(ctx.workflowId);
      return new Promise((_, reject) => signal.addEventListener('abort', () => reject(new Error('aborted'))));
    });
    return 'never';
  }
}

class Echo {
  async run(ctx: WorkflowContext, input: { v: number }) {
    return ctx.step('echo', () => input.v);
  }
}

const TIMINGS: Record<OwnershipMode, WeftEngineOptions> = {
  none: { ownership: 'none' },
  lease: { ownership: 'lease', leaseTtl: 900, leaseRenewInterval: 300, leaseWaitTimeout: 200 },
  'workflow-lease': { ownership: 'workflow-lease', workflowClaimTtl: 900, workflowClaimRenewInterval: 300 },
};

interface Marker {
  mode: string;
  established_at: Date;
}

describe('ownership gates: the mode marker (real PostgreSQL)', () => {
  const env = useTestEngines();
  let schemaSeq = 0;

  /** Every test gets its own schema, so the marker starts absent. */
  const freshSchema = () => `gates_${++schemaSeq}`;
  const engine = (schema: string, mode: OwnershipMode, extra: WeftEngineOptions = {}) =>
    env.pool.create({ schema, engineId: `${mode}-${schema}-${Math.random().toString(36).slice(2, 6)}`, ...TIMINGS[mode], ...extra }, (e) =>
      e.register('stuck', Stuck).register('echo', Echo),
    );
  const markers = (schema: string) => env.tdb.query<Marker>(`SELECT mode, established_at FROM "${schema}".weft_ownership_marker`);
  const rejection = (p: Promise<unknown>) =>
    p.then(
      () => {
        throw new Error('expected bootstrap to fail');
      },
      (err: unknown) => err as OwnershipModeMismatchError,
    );

  it.each([
    ['lease', 'workflow-lease'],
    ['workflow-lease', 'lease'],
  ] as Array<[OwnershipMode, OwnershipMode]>)(
    'the first fencing engine (%s) writes the marker; a %s engine fails bootstrap with OwnershipModeMismatchError',
    async (first, second) => {
      const schema = freshSchema();
      const a = await engine(schema, first);
      const before = Date.now();
      await a.bootstrap();
      const [marker, ...more] = await markers(schema);
      expect(more).toHaveLength(0);
      expect(marker.mode).toBe(first);
      expect(marker.established_at).toBeInstanceOf(Date);
      expect(Math.abs(marker.established_at.getTime() - before)).toBeLessThan(60_000); // written now, by the database

      const b = await engine(schema, second);
      const err = await rejection(b.bootstrap());
      expect(err).toBeInstanceOf(OwnershipModeMismatchError);
      expect(err).toMatchObject({ code: 'WEFT_OWNERSHIP_MODE_MISMATCH', configuredMode: second, storedMode: first });
      expect(err.establishedAt).toEqual(marker.established_at);
      expect(err.message).toContain(`'${second}'`);
      expect(err.message).toContain(`'${first}'`);
      expect(await markers(schema)).toEqual([marker]); // the loser overwrote nothing
      expect(b.healthSnapshot().bootstrapped).toBe(false);
    },
  );

  it('engines bootstrapping at the same moment with the same mode all succeed and write exactly one marker', async () => {
    for (let round = 0; round < 3; round++) {
      const schema = freshSchema();
      // Opened and migrated first, so the bootstraps themselves start together.
      const engines = await Promise.all([1, 2, 3, 4].map(() => engine(schema, 'workflow-lease')));
      const results = await Promise.allSettled(engines.map((e) => e.bootstrap()));
      expect(results.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'fulfilled', 'fulfilled']);
      const rows = await markers(schema);
      expect(rows.map((r) => r.mode)).toEqual(['workflow-lease']);
    }
    // The gate itself, ten at once on ten pooled connections of one fresh schema.
    const schema = freshSchema();
    const db = await openDatabase({ database: { url: env.tdb.url, poolSize: 10 }, schema });
    try {
      const gates = await Promise.allSettled(Array.from({ length: 10 }, () => runOwnershipGates(db.sql, schema, 'lease')));
      expect(gates.filter((g) => g.status === 'rejected')).toEqual([]);
      expect((await markers(schema)).map((r) => r.mode)).toEqual(['lease']);
    } finally {
      await db.close();
    }
  });

  it("a 'none' engine never touches the marker, and starts fine when the marker says 'lease'", async () => {
    const schema = freshSchema();
    const none = await engine(schema, 'none');
    await none.bootstrap();
    const h = await none.start('echo', { v: 1 });
    await expect(h.result({ timeout: '5s' })).resolves.toBe(1);
    expect(await markers(schema)).toEqual([]); // bootstrap and a whole run wrote no marker

    const leased = await engine(schema, 'lease');
    await leased.bootstrap();
    const [marker] = await markers(schema);
    expect(marker.mode).toBe('lease');
    await leased.dispose();

    const late = await engine(schema, 'none');
    await expect(late.bootstrap()).resolves.toBeUndefined();
    await expect((await late.start('echo', { v: 2 })).result({ timeout: '5s' })).resolves.toBe(2);
    expect(await markers(schema)).toEqual([marker]); // still 'lease', same established_at
  });

  /** Everything recovery, a claim, the lease or a timer pass could change, for one workflow. */
  const footprint = async (schema: string, id: string) => ({
    workflow: await env.tdb.query(`SELECT status, version, updated_at FROM "${schema}".weft_workflows WHERE id = $1`, [id]),
    operations: await env.tdb.query(`SELECT seq, name FROM "${schema}".weft_operations WHERE workflow_id = $1 ORDER BY seq`, [id]),
    timers: await env.tdb.query(`SELECT kind, seq, fire_at FROM "${schema}".weft_timers WHERE workflow_id = $1 ORDER BY id`, [id]),
    claims: await env.tdb.query(`SELECT workflow_id, epoch::text, engine_id, expires_at, version FROM "${schema}".weft_workflow_claims`),
    lease: await env.tdb.query(`SELECT epoch::text, holder, expires_at FROM "${schema}".weft_global_lease`),
  });

  /** Leaves a running workflow of type 'stuck' (one step recorded) whose owner is gone (claim or lease released). */
  async function orphanedRunning(schema: string, mode: OwnershipMode): Promise<string> {
    const owner = await engine(schema, mode);
    await owner.bootstrap();
    const h = await owner.start('stuck', {});
    await waitFor(() => stuck.has(h.workflowId), 'the stuck step running');
    expect((await owner.describe(h.workflowId)).history.map((o) => o.name)).toEqual(['before']);
    await owner.dispose();
    return h.workflowId;
  }

  async function expectGateFailsFirst(late: WeftEngine, schema: string, id: string): Promise<void> {
    const before = await footprint(schema, id);
    expect(before.workflow).toEqual([expect.objectContaining({ status: 'running' })]);
    const err = await rejection(late.bootstrap());
    expect(err).toBeInstanceOf(OwnershipModeMismatchError);
    expect(await footprint(schema, id)).toEqual(before);
    const snap = late.healthSnapshot();
    expect(snap).toMatchObject({ bootstrapped: false, liveWorkflows: 0, claimsHeld: 0, lastBackgroundPassAt: null });
  }

  it("nothing runs before the gates: a 'workflow-lease' engine refused by a 'lease' marker recovers and claims nothing", async () => {
    const schema = freshSchema();
    const id = await orphanedRunning(schema, 'lease');
    expect(await env.tdb.query(`SELECT 1 FROM "${schema}".weft_workflow_claims`)).toEqual([]); // 'lease' keeps no claim rows
    // Had recovery, the claim backfill or a reclaim run, a claim row would now exist.
    await expectGateFailsFirst(await engine(schema, 'workflow-lease'), schema, id);
  });

  it("nothing runs before the gates: a 'lease' engine refused by a 'workflow-lease' marker takes no lease and replays nothing", async () => {
    const schema = freshSchema();
    const id = await orphanedRunning(schema, 'workflow-lease');
    const [claim] = await env.tdb.query<{ engine_id: string | null }>(`SELECT engine_id FROM "${schema}".weft_workflow_claims`);
    expect(claim.engine_id).toBeNull(); // released by the owner's dispose: free for any recovering engine
    expect(await env.tdb.query(`SELECT 1 FROM "${schema}".weft_global_lease`)).toEqual([]);
    await expectGateFailsFirst(await engine(schema, 'lease'), schema, id);
  });

  it('nothing runs before a fencing engine passed its gates: start is refused, nothing written', async () => {
    const schema = freshSchema();
    const first = await engine(schema, 'lease');
    await first.bootstrap();
    const refused = await engine(schema, 'workflow-lease');
    await expect(refused.bootstrap()).rejects.toBeInstanceOf(OwnershipModeMismatchError);
    const count = async () => (await env.tdb.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${schema}.weft_workflows`))[0].n;
    const before = await count();
    await expect(refused.start('echo', { v: 1 })).rejects.toMatchObject({ code: 'WEFT_ENGINE_NOT_READY' });
    const never = await engine(freshSchema(), 'workflow-lease');
    await expect(never.start('echo', { v: 1 })).rejects.toMatchObject({ code: 'WEFT_ENGINE_NOT_READY' });
    expect(await count()).toBe(before);
  });
});
