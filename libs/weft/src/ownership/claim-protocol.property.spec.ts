import fc from 'fast-check';
import { Client } from 'pg';
import { createTestDatabase, TestDatabase } from '../../../../test/support/database.js';
import { waitFor } from '../../../../test/support/engine.js';
import { openDatabase, OpenedDatabase } from '../storage/data-source.js';
import type { SqlClient } from '../storage/sql-client.js';
import type { AdvanceCommand } from '../storage/types.js';
import { WorkflowStore } from '../storage/workflow-store.js';
import { AcquireResult, WorkflowClaimRegistry } from './claim-registry.js';
import type { OwnershipConfig } from './config.js';

// Property test of the claim protocol (docs/ownership.md) on the real tables: three registries act on the
// same rows in random orders; invariants are read back after every action (tiny TTL: real expiry too).
const SCHEMA = 'claims_prop';
const WORKFLOWS = ['w0', 'w1', 'w2', 'w3'];
const ENGINES = ['e1', 'e2', 'e3'];
const CONFIG: OwnershipConfig = { mode: 'workflow-lease', ttlMs: 60, renewMs: 20, graceMs: 40, leaseWaitMs: 0, maxConcurrent: 100 };
const TERMINAL = ['cancelled', 'timed_out', 'suspended'] as const;
const env = <T>(name: string, parse: (v: string) => T) => (process.env[name] ? parse(process.env[name]!) : undefined);
const ROW = { type: 't', status: 'running' as const, input: null, parentId: null, deadlineInMs: null, startInMs: null, timers: [] };

const fenced = (workflowId: string, expectedVersion: number, engineId: string, epoch: string): AdvanceCommand =>
  ({ workflowId, expectedVersion, fence: { engineId, epoch } }) as AdvanceCommand;

type Action =
  | { kind: 'acquire' | 'acquireNew' | 'release' | 'takeover'; engine: number; wf: number }
  | { kind: 'renewAll' | 'reclaim'; engine: number }
  | { kind: 'write'; engine: number; wf: number; release: boolean }
  | { kind: 'expire'; wf: number; how: 'wait' | 'update' }
  | { kind: 'rotate'; wf: number; status: (typeof TERMINAL)[number] }
  | { kind: 'race'; wf: number };

const engine = fc.nat({ max: ENGINES.length - 1 });
const wf = fc.nat({ max: WORKFLOWS.length - 1 });
// Real waits cost ~100 ms each, so most expiries move expires_at back instead (time passing).
const how = fc.constantFrom('update' as const, 'update' as const, 'wait' as const);
const actionArb: fc.Arbitrary<Action> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constantFrom('acquire' as const, 'takeover' as const), engine, wf }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constantFrom('acquireNew' as const, 'release' as const), engine, wf }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constantFrom('renewAll' as const, 'reclaim' as const), engine }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('write' as const), engine, wf, release: fc.boolean() }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('expire' as const), wf, how }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('rotate' as const), wf, status: fc.constantFrom(...TERMINAL) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('race' as const), wf }) },
);

type Claim = { epoch: string; engineId: string | null; expiresAt: Date | null; claimedAt: Date | null; expired: boolean };

interface World {
  regs: WorkflowClaimRegistry[];
  /** Per engine: the last epoch it held for each workflow, kept after it lost or released it. */
  known: Array<Map<string, string>>;
  /** Per engine: workflows it lost at least once (so its registry may be backing off them). */
  lost: Array<Set<string>>;
  lastEpoch: Map<string, bigint>;
}

describe('claim protocol: random interleavings of three registries (real PostgreSQL, fast-check)', () => {
  let tdb: TestDatabase;
  let db: OpenedDatabase;
  let store: WorkflowStore;
  /** One dedicated connection per engine for the rolled-back fence probes. */
  let probes: Client[] = [];
  const prepared = new Map<string, string>();

  beforeAll(async () => {
    tdb = await createTestDatabase();
    db = await openDatabase({ database: { url: tdb.url, poolSize: 8 }, schema: SCHEMA });
    store = new WorkflowStore(db.sql, db.schema);
    probes = ENGINES.map(() => new Client({ connectionString: tdb.url }));
    await Promise.all(probes.map((p) => p.connect()));
  });
  afterAll(async () => {
    await Promise.all(probes.map((p) => p.end()));
    await db?.close();
    await tdb?.drop();
  });

  const q = <R = Record<string, unknown>>(text: string, params: unknown[] = []) => db.sql.query<R>(text, params);

  async function claims(): Promise<Map<string, Claim>> {
    const rows = await q<Claim & { workflowId: string }>(
      `SELECT workflow_id AS "workflowId", epoch::text AS epoch, engine_id AS "engineId", expires_at AS "expiresAt",
              claimed_at AS "claimedAt",
              (engine_id IS NOT NULL AND expires_at + $1 * interval '1 millisecond' < clock_timestamp()) AS expired
       FROM "${SCHEMA}".weft_workflow_claims`,
      [CONFIG.graceMs],
    );
    return new Map(rows.map((r) => [r.workflowId, r]));
  }

  async function versions(): Promise<Map<string, number>> {
    const rows = await q<{ id: string; version: number }>(`SELECT id, version FROM "${SCHEMA}".weft_workflows`);
    return new Map(rows.map((r) => [r.id, r.version]));
  }

  /** True when `at + grace` is already in the past by the database clock (expiry is monotonic in time). */
  const pastGrace = async (at: Date | null) =>
    !!at && (await q<{ p: boolean }>(`SELECT $1::timestamptz + $2 * interval '1 ms' < clock_timestamp() AS p`, [at, CONFIG.graceMs]))[0].p;

  /**
   * Invariant (a) really attempts the fenced write: the same WorkflowStore.advanceMany, same SQL
   * text and JSON, runs on a dedicated connection inside BEGIN ... ROLLBACK, so the UPDATE and
   * its fence execute and report success or refusal, and nothing stays.
   * Each attempt is its own transaction, so every engine is judged against the same state.
   */
  async function rolledBack(probe: Client, commands: AdvanceCommand[]) {
    if (commands.length === 0) return [];
    const name = (text: string) => prepared.get(text) ?? prepared.set(text, `probe_${prepared.size}`).get(text)!;
    const viaProbe = { query: async (text: string, values?: unknown[]) => (await probe.query({ name: name(text), text, values })).rows };
    await probe.query('BEGIN');
    try {
      return await new WorkflowStore(viaProbe as unknown as SqlClient, SCHEMA).workflows.advanceMany(commands);
    } finally {
      await probe.query('ROLLBACK');
    }
  }

  async function freshWorld(): Promise<World> {
    await q(`TRUNCATE "${SCHEMA}".weft_workflows, "${SCHEMA}".weft_workflow_claims CASCADE`);
    for (const id of WORKFLOWS) await store.workflows.start({ ...ROW, id });
    return {
      regs: ENGINES.map((id) => new WorkflowClaimRegistry({ sql: db.sql, schema: SCHEMA, engineId: id, config: CONFIG })),
      known: ENGINES.map(() => new Map()),
      lost: ENGINES.map(() => new Set()),
      lastEpoch: new Map(),
    };
  }

  const plus1 = (epoch: string | undefined) => String(BigInt(epoch ?? '0') + 1n);
  /** Does the claim row name this engine at this epoch (the fence condition)? */
  const names = (c: Claim | undefined, engineId: string, epoch: string | undefined) => c?.engineId === engineId && c.epoch === epoch;

  function noteWin(w: World, e: number, id: string, r: AcquireResult): void {
    if (r.ok) w.known[e].set(id, r.epoch);
    if (!r.ok && r.reason === 'backoff') expect(w.lost[e].has(id)).toBe(true); // only a lost claim backs off
  }

  /** An existing claim row is only taken while the workflow still runs at the version read, free or its holder dead. */
  async function acquireNew(w: World, e: number, id: string, before: Claim | undefined): Promise<boolean> {
    const [row] = await q<{ version: number; status: string }>(`SELECT version, status FROM "${SCHEMA}".weft_workflows WHERE id = $1`, [
      id,
    ]);
    const won = await w.regs[e].acquireNew(id, row.version);
    const running = before === undefined || row.status === 'running';
    if (!before?.engineId || before.expired) expect(won).toBe(running);
    else if (won) expect(running && (await pastGrace(before.expiresAt))).toBe(true);
    return won;
  }

  async function acquire(w: World, e: number, id: string, fresh: boolean): Promise<void> {
    const before = (await claims()).get(id);
    let won: boolean;
    if (fresh) {
      won = await acquireNew(w, e, id, before);
      if (won) w.known[e].set(id, plus1(before?.epoch));
    } else {
      const r = await w.regs[e].acquire(id);
      noteWin(w, e, id, r);
      won = r.ok;
      // Free, or its holder expired past the grace (died between its claim and its write).
      if (r.ok) {
        if (before?.engineId) expect(await pastGrace(before.expiresAt)).toBe(true);
      } else if (r.reason === 'held')
        expect({ heldBy: r.heldBy, epoch: r.epoch }).toEqual({ heldBy: before?.engineId, epoch: before?.epoch });
      else expect(r.reason).toBe('backoff'); // sequential: a lost race is impossible here
    }
    const after = (await claims()).get(id);
    if (won) expect(after).toMatchObject({ engineId: ENGINES[e], epoch: plus1(before?.epoch) });
    if (won) expect(w.regs[e].held.get(id)).toBe(after!.epoch);
    else if (before) expect(after).toMatchObject({ engineId: before.engineId, epoch: before.epoch });
  }

  async function takeover(w: World, e: number, id: string): Promise<void> {
    const view = await w.regs[e].read(id);
    if (!view) return; // no row yet: nothing to take over
    const r = await w.regs[e].takeover(id, view.engineId ?? '(nobody)', view.epoch);
    noteWin(w, e, id, r);
    const after = (await claims()).get(id)!;
    if (r.ok) {
      expect(view.engineId).not.toBeNull();
      expect(await pastGrace(view.expiresAt)).toBe(true); // it really was expired when taken
      expect(after).toMatchObject({ engineId: ENGINES[e], epoch: plus1(view.epoch) });
    } else {
      if (view.expired) expect(r.reason).toBe('backoff'); // expired as read and untouched since: must win
      expect(after.epoch).toBe(view.epoch);
    }
  }

  async function renewAll(w: World, e: number): Promise<void> {
    const before = await claims();
    const held = new Map(w.regs[e].held);
    const lost = await w.regs[e].renewAll();
    const after = await claims();
    for (const [id, epoch] of held) {
      const mine = names(before.get(id), ENGINES[e], epoch);
      expect({ id, lost: lost.includes(id) }).toEqual({ id, lost: !mine });
      if (mine) expect(after.get(id)!.claimedAt).toEqual(before.get(id)!.claimedAt); // renewal keeps claimed_at
      if (!mine) w.lost[e].add(id);
    }
  }

  async function release(w: World, e: number, id: string): Promise<void> {
    const before = (await claims()).get(id);
    const epoch = w.regs[e].held.get(id);
    expect(await w.regs[e].release(id)).toBe(epoch !== undefined);
    expect(w.regs[e].held.has(id)).toBe(false);
    const after = (await claims()).get(id);
    const mine = names(before, ENGINES[e], epoch);
    expect(after?.engineId).toBe(mine ? null : before?.engineId);
    expect(after?.epoch).toBe(before?.epoch); // release never changes the epoch
  }

  /** The engine's own fenced commit (really committed), with the epoch it believes in. */
  async function write(w: World, e: number, id: string, rel: boolean): Promise<void> {
    const epoch = w.regs[e].held.get(id) ?? w.known[e].get(id);
    if (epoch === undefined) return;
    const before = (await claims()).get(id);
    const version = (await versions()).get(id)!;
    const fence = { engineId: ENGINES[e], epoch };
    const [out] = await store.workflows.advanceMany([{ workflowId: id, expectedVersion: version, fence, release: rel }]);
    const mine = names(before, ENGINES[e], epoch);
    expect(out).toEqual(mine ? { workflowId: id, ok: true, version: version + 1 } : { workflowId: id, ok: false, reason: 'fence' });
    const after = (await claims()).get(id);
    expect(after?.epoch).toBe(before?.epoch);
    expect(after?.engineId).toBe(mine && rel ? null : before?.engineId);
    if (mine && rel) w.regs[e].forget(id); // what WorkflowLeasePolicy.afterCommit does after a releasing commit
    if (!mine && w.regs[e].held.get(id) === epoch) {
      w.regs[e].lose(id); // what Ownership.deposed does after a refused fence
      w.lost[e].add(id);
    }
  }

  async function expire(id: string, how: 'wait' | 'update'): Promise<void> {
    const before = (await claims()).get(id);
    if (!before?.engineId) return;
    if (how === 'update') {
      const sql = `UPDATE "${SCHEMA}".weft_workflow_claims SET expires_at = clock_timestamp() - $2 * interval '1 ms' WHERE workflow_id = $1`;
      await q(sql, [id, CONFIG.ttlMs + CONFIG.graceMs + 1]);
    } else {
      await waitFor(async () => (await claims()).get(id)!.expired, `claim ${id} expired by the database clock`, 2000, 5);
    }
    expect((await claims()).get(id)).toMatchObject({ expired: true, engineId: before.engineId, epoch: before.epoch });
  }

  /** An external terminal transition: an unfenced advance that rotates the epoch and clears the holder. */
  async function rotate(id: string, status: (typeof TERMINAL)[number]): Promise<void> {
    const before = (await claims()).get(id);
    const version = (await versions()).get(id)!;
    const [out] = await store.workflows.advanceMany([
      { workflowId: id, expectedVersion: version, status, completed: status !== 'suspended', rotate: true },
    ]);
    expect(out.ok).toBe(true);
    const after = (await claims()).get(id);
    if (before) expect(after).toMatchObject({ engineId: null, expiresAt: null, claimedAt: null, epoch: plus1(before.epoch) });
    else expect(after).toBeUndefined();
  }

  async function reclaim(w: World, e: number): Promise<void> {
    const before = await claims();
    const statuses = await q<{ id: string; status: string }>(`SELECT id, status FROM "${SCHEMA}".weft_workflows`);
    const running = new Set(statuses.filter((s) => s.status === 'running').map((s) => s.id));
    const taken = await w.regs[e].reclaim(['t'], 5);
    const after = await claims();
    for (const t of taken) {
      const b = before.get(t.workflowId)!;
      expect(running.has(t.workflowId)).toBe(true);
      expect(b.engineId === null || (await pastGrace(b.expiresAt))).toBe(true);
      expect({ previous: t.previous, epoch: t.epoch }).toEqual({ previous: b.engineId, epoch: plus1(b.epoch) });
      expect(after.get(t.workflowId)).toMatchObject({ engineId: ENGINES[e], epoch: t.epoch });
      w.known[e].set(t.workflowId, t.epoch);
    }
    for (const [id, b] of before) {
      const orphan = running.has(id) && (b.engineId === null || b.expired) && !w.lost[e].has(id);
      if (orphan) expect(taken.map((t) => t.workflowId)).toContain(id); // limit 5 > 4 workflows: none left behind
    }
  }

  /** All three engines try to get the same workflow at once, each by what it read. */
  async function race(w: World, id: string): Promise<void> {
    const before = (await claims()).get(id);
    const t0 = performance.now();
    const results = await Promise.all(
      w.regs.map(async (reg) => {
        const view = await reg.read(id);
        return view?.engineId ? reg.takeover(id, view.engineId, view.epoch) : reg.acquire(id);
      }),
    );
    const took = performance.now() - t0;
    results.forEach((r, e) => noteWin(w, e, id, r));
    const winners = results.filter((r) => r.ok);
    // One winner, unless the race outlasted a TTL plus the grace (a loaded machine; the TTL is
    // 60 ms): then a later engine may legitimately take over the first winner's expired claim.
    // Never two at one epoch: each win is the epoch after the one before.
    if (took <= CONFIG.ttlMs + CONFIG.graceMs) expect(winners.length).toBeLessThanOrEqual(1);
    expect(new Set(winners.map((r) => (r.ok ? r.epoch : ''))).size).toBe(winners.length);
    const eligible = !before?.engineId || before.expired;
    if (eligible && ENGINES.some((_, e) => !w.lost[e].has(id))) expect(winners.length).toBeGreaterThanOrEqual(1);
    const after = (await claims()).get(id)!;
    expect(after.epoch).toBe(String(BigInt(before?.epoch ?? '0') + BigInt(winners.length)));
  }

  async function perform(w: World, a: Action): Promise<void> {
    switch (a.kind) {
      case 'acquire':
      case 'acquireNew':
        return acquire(w, a.engine, WORKFLOWS[a.wf], a.kind === 'acquireNew');
      case 'takeover':
        return takeover(w, a.engine, WORKFLOWS[a.wf]);
      case 'renewAll':
        return renewAll(w, a.engine);
      case 'release':
        return release(w, a.engine, WORKFLOWS[a.wf]);
      case 'write':
        return write(w, a.engine, WORKFLOWS[a.wf], a.release);
      case 'expire':
        return expire(WORKFLOWS[a.wf], a.how);
      case 'rotate':
        return rotate(WORKFLOWS[a.wf], a.status);
      case 'reclaim':
        return reclaim(w, a.engine);
      case 'race':
        return race(w, WORKFLOWS[a.wf]);
    }
  }

  /** (b) epochs never decrease; (d) rows are never deleted; holder fields are set or cleared together. */
  function checkRows(w: World, now: Map<string, Claim>): void {
    for (const [id, last] of w.lastEpoch) {
      expect(now.has(id)).toBe(true);
      expect(BigInt(now.get(id)!.epoch) >= last).toBe(true);
    }
    for (const [id, c] of now) {
      w.lastEpoch.set(id, BigInt(c.epoch));
      expect([c.expiresAt === null, c.claimedAt === null]).toEqual([c.engineId === null, c.engineId === null]);
      if (c.engineId !== null) expect(BigInt(c.epoch) >= 1n).toBe(true);
    }
  }

  /**
   * (c) no registry caches an epoch above the database's, and only the DB holder caches or
   * remembers the current epoch of a held claim: an epoch is handed to one holding only.
   */
  function checkRegistries(w: World, now: Map<string, Claim>): void {
    for (const [e, reg] of w.regs.entries()) {
      for (const [id, epoch] of reg.held) {
        const c = now.get(id);
        expect(c).toBeDefined();
        expect(BigInt(epoch) <= BigInt(c!.epoch)).toBe(true);
        if (epoch === c!.epoch) expect(c!.engineId).toBe(ENGINES[e]);
      }
      for (const [id, epoch] of w.known[e]) {
        const c = now.get(id);
        if (c?.engineId && epoch === c.epoch) expect({ id, holder: c.engineId }).toEqual({ id, holder: ENGINES[e] });
      }
    }
  }

  /**
   * (a) a fenced write commits only at the DB epoch of a held claim (the fence is the epoch, the
   * row's fence_epoch: docs/decisions/0008), so with (c) at most one engine can commit per
   * workflow, the DB holder. Each engine tries with the epoch it believes in (held or last
   * known), and as an impostor with the DB's current epoch and with the one before it (a stale
   * in-flight write of an earlier holding, possibly its own). Engines probe one after another:
   * an impostor with the current epoch passes, and its rolled-back write locks the row.
   */
  async function checkFences(w: World, now: Map<string, Claim>): Promise<void> {
    const v = await versions();
    const wins = new Map<string, Set<string>>(WORKFLOWS.map((id) => [id, new Set()]));
    const probeEngine = async (e: number, engineId: string) => {
      // Candidate epochs per workflow, deduplicated; round r tries each workflow's r-th candidate.
      const candidates = WORKFLOWS.map((id) => {
        const current = now.get(id)?.epoch ?? '0';
        const previous = current === '0' ? [] : [String(BigInt(current) - 1n)];
        const believed = w.regs[e].held.get(id) ?? w.known[e].get(id);
        return { id, epochs: [...new Set([...(believed ? [believed] : []), current, ...previous])] };
      });
      for (let round = 0; candidates.some((c) => c.epochs.length > round); round++) {
        const cmds = candidates.filter((c) => c.epochs.length > round).map((c) => fenced(c.id, v.get(c.id)!, engineId, c.epochs[round]));
        for (const [i, out] of (await rolledBack(probes[e], cmds)).entries()) {
          const c = now.get(out.workflowId);
          const epoch = cmds[i].fence!.epoch;
          const legit = !!c?.engineId && c.epoch === epoch;
          expect({ ...cmds[i].fence, id: out.workflowId, ok: out.ok }).toEqual({ ...cmds[i].fence, id: out.workflowId, ok: legit });
          if (!out.ok) expect(out.reason).toBe('fence');
          const believed = (w.regs[e].held.get(out.workflowId) ?? w.known[e].get(out.workflowId)) === epoch;
          if (out.ok && believed) wins.get(out.workflowId)!.add(engineId);
        }
      }
    };
    for (const [e, engineId] of ENGINES.entries()) await probeEngine(e, engineId);
    for (const [id, engines] of wins) {
      expect({ id, engines: engines.size <= 1 }).toEqual({ id, engines: true });
      if (now.get(id)?.engineId) expect([...engines]).toEqual([now.get(id)!.engineId]);
    }
    expect(await versions()).toEqual(v); // the probes were rolled back
  }

  async function checkInvariants(w: World): Promise<void> {
    const now = await claims();
    checkRows(w, now);
    checkRegistries(w, now);
    await checkFences(w, now);
  }

  it('keeps every claim invariant after each action', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(actionArb, { minLength: 10, maxLength: 25 }), async (actions) => {
        const world = await freshWorld();
        for (const a of actions) {
          await perform(world, a);
          await checkInvariants(world);
        }
      }),
      // On failure fast-check prints the seed and path; replay with WEFT_FC_SEED=<seed> WEFT_FC_PATH=<path>.
      { numRuns: Number(process.env.WEFT_FC_RUNS ?? 100), seed: env('WEFT_FC_SEED', Number), path: env('WEFT_FC_PATH', String) },
    );
  }, 120_000); // ~25 s alone; headroom for a loaded machine running other suites
});
