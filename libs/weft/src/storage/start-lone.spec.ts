// The lone start (one workflow, no timers, no start signal) is a second text of startMany's insert
// and claim. Each start below runs on two ids with the same rows beforehand: one alone (the lone
// text) and one in a batch with a filler (the general statement). The result and every row either
// writes (the workflow, its claim, timers, messages) must be the same.
import { useTestStore } from '../../../../test/support/store.js';
import type { ClaimTerms } from './repositories/claim.repository.js';
import type { InsertWorkflow } from './types.js';
import { isLoneStart } from './repositories/workflow-start-lone.js';

const claimer: ClaimTerms = { engineId: 'engine-a', ttlMs: 5_000, graceMs: 1_000 };

const base = (over: Partial<InsertWorkflow> = {}): Omit<InsertWorkflow, 'id'> => ({
  type: 'noop',
  status: 'running',
  input: { n: 1 },
  parentId: null,
  deadlineInMs: null,
  startInMs: null,
  timers: [],
  ...over,
});

type Before = 'nothing' | 'free claim row at 6' | 'claim held by engine-b' | 'claim of engine-b expired' | 'workflow exists';

/** Starts as the engine makes them, with the rows there beforehand. Each names why it is here. */
const cases: Record<string, { w: Omit<InsertWorkflow, 'id'>; claimer?: ClaimTerms; before: Before }> = {
  'ownership none': { w: base(), before: 'nothing' },
  'every column: parent, trace, version, queue and priority': {
    w: base({
      status: 'enqueued',
      parentId: 'the-parent',
      traceContext: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
      workflowVersion: 'v2',
      queue: 'emails',
      priority: 7,
    }),
    before: 'nothing',
  },
  'a null input is SQL NULL': { w: base({ input: null }), before: 'nothing' },
  'an absent input': { w: base({ input: undefined }), before: 'nothing' },
  'a claim of its own, new id': { w: base({ claim: 'mine' }), claimer, before: 'nothing' },
  'a claim of its own over a free row an earlier run left': { w: base({ claim: 'mine' }), claimer, before: 'free claim row at 6' },
  'a claim of its own over a row naming a holder, of a run that is gone (it fences nothing: taken)': {
    w: base({ claim: 'mine' }),
    claimer,
    before: 'claim held by engine-b',
  },
  'a claim of its own over an expired holder': { w: base({ claim: 'mine' }), claimer, before: 'claim of engine-b expired' },
  'a free claim row': { w: base({ claim: 'free' }), claimer, before: 'nothing' },
  'a free claim row over a held one (left as it is)': { w: base({ claim: 'free' }), claimer, before: 'claim held by engine-b' },
  'claim asked for without claim terms: none': { w: base({ claim: 'mine' }), before: 'nothing' },
  'the id exists: not inserted, its status and version': { w: base({ claim: 'mine' }), claimer, before: 'workflow exists' },
};

describe('lone start: the same result and rows as startMany (real PostgreSQL)', () => {
  const env = useTestStore({ poolSize: 4 });

  async function prepare(id: string, before: Before): Promise<void> {
    const claim = (epoch: number, engine: string | null, expiresIn: string) =>
      env.tdb.query(
        `INSERT INTO weft.weft_workflow_claims (workflow_id, epoch, engine_id, expires_at, claimed_at) VALUES ($1, $2, $3, now() + $4::interval, now())`,
        [id, epoch, engine, expiresIn],
      );
    if (before === 'free claim row at 6') await claim(6, null, '0 s');
    if (before === 'claim held by engine-b') await claim(6, 'engine-b', '1 hour');
    if (before === 'claim of engine-b expired') await claim(6, 'engine-b', '-1 hour');
    if (before === 'workflow exists')
      await env.tdb.query(`INSERT INTO weft.weft_workflows (id, type, status, input, version) VALUES ($1, 'other', 'suspended', '{}', 5)`, [
        id,
      ]);
  }

  /** What a start wrote, with the id and the times it sets left out; SQL NULL told from a JSON null. */
  async function rowsOf(id: string) {
    const [workflow] = await env.tdb.query(
      `SELECT type, status, input, input IS NULL AS no_input, parent_id, deadline, start_at, version, run_number, trace_context,
              workflow_version, queue, priority, fence_epoch::text AS fence_epoch
       FROM weft.weft_workflows WHERE id = $1`,
      [id],
    );
    const [claim] = await env.tdb.query(
      `SELECT epoch::text AS epoch, engine_id, expires_at > now() AS live, claimed_at IS NULL AS unclaimed, version
       FROM weft.weft_workflow_claims WHERE workflow_id = $1`,
      [id],
    );
    const [{ timers, messages }] = await env.tdb.query<{ timers: number; messages: number }>(
      `SELECT (SELECT count(*) FROM weft.weft_timers WHERE workflow_id = $1)::int AS timers,
              (SELECT count(*) FROM weft.weft_messages WHERE workflow_id = $1)::int AS messages`,
      [id],
    );
    return { workflow, claim, timers, messages };
  }

  it.each(Object.keys(cases))('%s', async (name) => {
    const i = Object.keys(cases).indexOf(name);
    const { w, claimer: terms, before } = cases[name];
    const [viaLone, viaGeneral] = [`lone-${i}`, `general-${i}`];
    await prepare(viaLone, before);
    await prepare(viaGeneral, before);
    const lone: InsertWorkflow = { ...w, id: viaLone };
    expect(isLoneStart([lone])).toBe(true);

    const [a] = await env.store.workflows.startMany([lone], terms);
    // A second workflow in the batch makes it the general statement; the filler is not compared.
    const [b] = await env.store.workflows.startMany(
      [
        { ...w, id: viaGeneral },
        { ...base(), id: `filler-${i}` },
      ],
      terms,
    );
    expect(a).toEqual(b);
    expect(await rowsOf(viaLone)).toEqual(await rowsOf(viaGeneral));
    // Not vacuous: a new id is inserted, an existing one reported as it was.
    expect(a.inserted).toBe(before !== 'workflow exists');
    expect((await rowsOf(viaLone)).workflow).toBeDefined();
  });

  it('takes one start without timers, deadline, delayed start or signal; the rest go to the general statement', () => {
    const w: InsertWorkflow = { ...base(), id: 'w' };
    expect(isLoneStart([w])).toBe(true);
    expect(isLoneStart([w, { ...w, id: 'v' }])).toBe(false);
    expect(isLoneStart([{ ...w, deadlineInMs: 60_000, timers: [{ kind: 'execution-deadline', delayMs: 60_000 }] }])).toBe(false);
    expect(isLoneStart([{ ...w, status: 'pending', startInMs: 500, timers: [{ kind: 'delayed-start', delayMs: 500 }] }])).toBe(false);
    expect(isLoneStart([{ ...w, deadlineInMs: 60_000 }])).toBe(false);
    expect(isLoneStart([{ ...w, signal: { name: 'go', payload: 1 } }])).toBe(false);
  });
});
