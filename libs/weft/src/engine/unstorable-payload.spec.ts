import fc from 'fast-check';
import { codeUnit } from '../../../../test/support/code-units.js';
import { useTestEngines, waitFor } from '../../../../test/support/engine.js';
import type { WorkflowContext, WorkflowDefinition } from '../common/types.js';
import type { WeftEngine } from './engine.js';
import { toStoredJson } from './validation.js';

// A string PostgreSQL cannot store (U+0000, a lone UTF-16 surrogate) anywhere in a payload: refused
// with WEFT_PAYLOAD_NOT_SERIALIZABLE when offered, nothing written; inside a run it fails the call
// that made it (a step result fails the attempt), never the run's commit (docs/messages.md).

const BAD: Array<[string, unknown]> = [
  ['a NUL in a value', { items: [{ note: 'a\u0000b' }] }],
  ['a NUL in a key', { a: { ['k\u0000']: 1 } }],
  ['a lone surrogate', ['x\ud800y']],
];
const BAD_TEXT: Array<[string, string]> = [
  ['a NUL', 'stop\u0000now'],
  ['a lone surrogate', 'stop \udc00'],
];
const bad = (i: number) => BAD[i][1];
const NOT_STORABLE = 'WEFT_PAYLOAD_NOT_SERIALIZABLE';

const bodyRuns = new Map<string, number>();
const ran = (id: string) => bodyRuns.set(id, (bodyRuns.get(id) ?? 0) + 1);

class Echo {
  async run(_ctx: WorkflowContext, input: unknown) {
    return input;
  }
}

class Waiter {
  async run(ctx: WorkflowContext) {
    return ctx.waitForSignal('go', { timeout: '1h' });
  }
}

/** Waits for 'done'; its update and query handlers echo their args, or return BAD[i] for { bad: i }. */
class Gate {
  notes: unknown[] = [];
  async run(ctx: WorkflowContext) {
    await ctx.waitForSignal('done', { timeout: '1h' });
    return { notes: this.notes };
  }
  onNote(note: unknown) {
    this.notes.push(note);
  }
  echo(args: { bad?: number } | null) {
    return args?.bad === undefined ? args : bad(args.bad);
  }
}
const gateDef: WorkflowDefinition = {
  name: 'gate',
  factory: () => new Gate() as never,
  signalHandlers: { note: 'onNote' },
  updateHandlers: { echo: 'echo' },
  queryHandlers: { echo: 'echo' },
};

/** What a workflow does with BAD[bad]; each catches the typed error and returns its code. */
class Inside {
  async run(ctx: WorkflowContext, input: { what: string; bad: number }) {
    const value = bad(input.bad);
    const code = (err: unknown) => (err as { code?: string }).code;
    switch (input.what) {
      case 'step result': {
        const out = await ctx
          .step(
            'produce',
            () => {
              ran(ctx.workflowId);
              return value;
            },
            { retry: { maxAttempts: 2, initialInterval: 1 } },
          )
          .catch(code);
        return { out, after: await ctx.step('after', () => 'went on') };
      }
      case 'step result, fine on retry':
        return ctx.step('produce', ({ attempt }) => (attempt === 1 ? value : 'fine'), { retry: { maxAttempts: 2, initialInterval: 1 } });
      case 'output':
        return value;
      case 'continue-as-new input':
        return ctx.continueAsNew(value).catch(code);
      case 'child input':
        return ctx.startChild('echo', value, { workflowId: `${ctx.workflowId}-child` }).then(() => 'started', code);
      case 'step error message':
        return ctx
          .step(
            'throws',
            () => {
              throw new Error('broke \u0000 \ud800');
            },
            { retry: { maxAttempts: 1 } },
          )
          .catch(code);
      case 'thrown by run()':
        throw new Error('run broke \u0000');
      default:
        throw new Error(`unknown ${input.what}`);
    }
  }
}

describe('a payload PostgreSQL cannot store is refused where it is offered (real PostgreSQL)', () => {
  const env = useTestEngines({ disposeAfterEach: false });
  let engine: WeftEngine;
  const TABLES = ['weft_workflows', 'weft_messages', 'weft_operations', 'weft_timers'];
  const counts = async () =>
    Object.fromEntries(
      await Promise.all(
        TABLES.map(async (t) => [t, (await env.tdb.query<{ n: number }>(`SELECT count(*)::int AS n FROM weft.${t}`))[0].n]),
      ),
    );

  beforeAll(async () => {
    engine = await env.pool.create({}, (e) =>
      e.register('echo', Echo).register('waiter', Waiter).register(gateDef).register('inside', Inside),
    );
    await engine.bootstrap();
    await engine.start('waiter', null, { workflowId: 'waiting' });
    await engine.start('gate', null, { workflowId: 'gate-1' });
    // Both wait with a timeout: their timer rows are written after the start returns.
    await waitFor(async () => (await counts()).weft_timers === 2, 'both waits written');
  });

  const offered: Array<[string, (v: unknown) => Promise<unknown>]> = [
    ['start (due now): input', (v) => engine.start('echo', v)],
    ['start (delayed): input', (v) => engine.start('echo', v, { startAfter: '1h' })],
    ['start (at a date): input', (v) => engine.start('echo', v, { startAt: new Date(Date.now() + 3_600_000) })],
    ['signalWithStart: input', (v) => engine.signalWithStart('waiter', v, { name: 'go' }, { workflowId: 'sws-new' })],
    [
      'signalWithStart: signal payload',
      (v) => engine.signalWithStart('waiter', null, { name: 'go', payload: v }, { workflowId: 'sws-new' }),
    ],
    [
      'signalWithStart to a running workflow: payload',
      (v) => engine.signalWithStart('waiter', null, { name: 'go', payload: v }, { workflowId: 'waiting' }),
    ],
    ['signal: payload', (v) => engine.signal('waiting', 'go', v)],
    ['signal to a handler: payload', (v) => engine.signal('gate-1', 'note', v)],
    ['update: args', (v) => engine.update('gate-1', 'echo', v)],
    ['query: args', (v) => engine.query('gate-1', 'echo', v)],
  ];
  const cases = offered.flatMap(([call, fn]) => BAD.map(([what], i) => [`${call} with ${what}`, () => fn(bad(i))] as const));

  it.each(cases)('%s: WEFT_PAYLOAD_NOT_SERIALIZABLE, nothing written', async (_what, call) => {
    const before = await counts();
    await expect(call()).rejects.toMatchObject({ code: NOT_STORABLE });
    expect(await counts()).toEqual(before);
  });

  it.each([
    ['cancel', (r: string) => engine.cancel('waiting', r)],
    ['suspend', (r: string) => engine.suspend('waiting', r)],
  ])('%s: a reason with a NUL or a lone surrogate is refused, the workflow left as it was', async (_what, call) => {
    for (const [, reason] of BAD_TEXT) {
      const before = await counts();
      await expect(call(reason)).rejects.toMatchObject({ code: NOT_STORABLE });
      expect(await counts()).toEqual(before);
      expect((await engine.describe('waiting')).status).toBe('running');
    }
  });

  it('the rule accepts exactly what PostgreSQL stores as jsonb (property-based)', async () => {
    await env.tdb.query(`CREATE OR REPLACE FUNCTION public.valid_jsonb(t text) RETURNS boolean LANGUAGE plpgsql AS $$
      BEGIN PERFORM t::jsonb; RETURN true; EXCEPTION WHEN others THEN RETURN false; END $$`);
    const accepted = (v: unknown) => {
      try {
        toStoredJson(v, 'Workflow input', 1_000_000);
        return true;
      } catch {
        return false;
      }
    };
    await fc.assert(
      fc.asyncProperty(fc.array(fc.jsonValue({ stringUnit: codeUnit, maxDepth: 3 }), { minLength: 1, maxLength: 100 }), async (values) => {
        const [{ valid }] = await env.tdb.query<{ valid: boolean[] }>(
          'SELECT array_agg(public.valid_jsonb(t) ORDER BY i) AS valid FROM unnest($1::text[]) WITH ORDINALITY AS x(t, i)',
          [values.map((v) => JSON.stringify(v))],
        );
        expect(values.map(accepted)).toEqual(valid);
      }),
      { numRuns: 30 },
    );
  });

  it('the workflows offered those payloads still run: they take a good signal and end', async () => {
    await engine.signal('waiting', 'go', 'good');
    await expect(engine.result('waiting', { timeout: '10s' })).resolves.toBe('good');
  });

  const inside = (what: string, i: number) => engine.start('inside', { what, bad: i }, { workflowId: `${what.replace(/\W/g, '-')}-${i}` });

  it.each(BAD.map(([what], i) => [what, i]))(
    'a step result with %s fails the attempt: retried per policy, recorded as a step failure, the run goes on',
    async (_what, i) => {
      const h = await inside('step result', i as number);
      await expect(h.result({ timeout: '10s' })).resolves.toEqual({ out: 'WEFT_STEP_FAILED', after: 'went on' });
      expect(bodyRuns.get(h.workflowId)).toBe(2);
      const [produce] = (await h.describe()).history;
      expect(produce).toMatchObject({ name: 'produce', status: 'failed', attempts: 2, error: { name: 'PayloadNotSerializableError' } });
    },
  );

  it('a step whose first result cannot be stored records its retry', async () => {
    const h = await inside('step result, fine on retry', 0);
    await expect(h.result({ timeout: '10s' })).resolves.toBe('fine');
    expect((await h.describe()).history[0]).toMatchObject({ status: 'completed', attempts: 2 });
  });

  it.each(BAD.map(([what], i) => [what, i]))('a workflow returning an output with %s fails with the typed error', async (_what, i) => {
    const h = await inside('output', i as number);
    await expect(h.result({ timeout: '10s' })).rejects.toMatchObject({ status: 'failed' });
    const d = await h.describe();
    expect(d.status).toBe('failed');
    expect(d.error).toMatchObject({ name: 'PayloadNotSerializableError' });
  });

  it.each(['continue-as-new input', 'child input'].flatMap((what) => BAD.map((_b, i) => [what, i] as const)))(
    '%s with BAD[%i] is refused at the call, nothing started',
    async (what, i) => {
      const h = await inside(what, i);
      await expect(h.result({ timeout: '10s' })).resolves.toBe(NOT_STORABLE);
      const children = await env.tdb.query('SELECT 1 FROM weft.weft_workflows WHERE parent_id = $1', [h.workflowId]);
      expect(children).toEqual([]);
      expect((await h.describe()).runNumber).toBe(1);
    },
  );

  it.each(BAD.map(([what], i) => [what, i]))('an update result with %s fails the update; the workflow goes on', async (_what, i) => {
    await expect(engine.update('gate-1', 'echo', { bad: i })).rejects.toMatchObject({
      code: 'WEFT_UPDATE_FAILED',
      cause: { name: 'PayloadNotSerializableError' },
    });
    await expect(engine.update('gate-1', 'echo', { ok: i })).resolves.toEqual({ ok: i });
  });

  it.each(BAD.map(([what], i) => [what, i]))('a query result with %s is a typed error', async (_what, i) => {
    await expect(engine.query('gate-1', 'echo', { bad: i })).rejects.toMatchObject({ code: NOT_STORABLE });
  });

  it('an error message PostgreSQL cannot store is recorded with U+FFFD in its place (a step, and run() itself)', async () => {
    const step = await inside('step error message', 0);
    await expect(step.result({ timeout: '10s' })).resolves.toBe('WEFT_STEP_FAILED');
    expect((await step.describe()).history[0].error).toMatchObject({ message: 'broke \ufffd \ufffd' });
    const run = await inside('thrown by run()', 0);
    await expect(run.result({ timeout: '10s' })).rejects.toMatchObject({ status: 'failed' });
    expect((await run.describe()).error).toMatchObject({ message: 'run broke \ufffd' });
  });
});

/** A pending message already stored with a payload no commit can hold (an older version, direct SQL). */
describe('a stored message that can never be applied does not block its workflow (real PostgreSQL)', () => {
  const env = useTestEngines();
  const register = (e: WeftEngine) => e.register('echo', Echo).register('waiter', Waiter).register(gateDef).register('parent', Parent);

  class Parent {
    async run(ctx: WorkflowContext) {
      try {
        return await ctx.executeChild('waiter', null, { workflowId: `${ctx.workflowId}-child` });
      } catch (err) {
        return { code: (err as { code?: string }).code, cause: (err as { cause?: { name?: string } }).cause?.name };
      }
    }
  }

  /** Inserts the row as an older version could have, with a payload in PostgreSQL's json escapes. */
  const storeBad = async (workflowId: string, kind: string, name: string, payloadJson: string) =>
    (
      await env.tdb.query<{ id: string }>(
        `WITH m AS (INSERT INTO weft.weft_messages (workflow_id, kind, name, payload) VALUES ($1, $2, $3, $4::json) RETURNING id)
         SELECT id::text AS id, pg_notify('weft_weft', $1) FROM m`,
        [workflowId, kind, name, payloadJson],
      )
    )[0].id;
  const messageRow = async (id: string) =>
    (await env.tdb.query<{ status: string; result: unknown }>('SELECT status, result FROM weft.weft_messages WHERE id = $1', [id]))[0];
  const refused = (id: string) => waitFor(async () => (await messageRow(id)).status === 'refused', `message ${id} refused`);
  const PAYLOADS = ['{"note":"a\\u0000b"}', '{"k\\u0000":1}', '"x\\ud800y"'];

  it.each(PAYLOADS)('a signal for waitForSignal with payload %s is refused; the next one is taken', async (payload) => {
    const e = await env.pool.create({}, register);
    await e.bootstrap();
    const h = await e.start('waiter', null);
    const id = await storeBad(h.workflowId, 'signal', 'go', payload);
    await refused(id);
    expect((await messageRow(id)).result).toMatchObject({ error: { name: 'PayloadNotSerializableError' } });
    await e.signal(h.workflowId, 'go', 'good');
    await expect(h.result({ timeout: '10s' })).resolves.toBe('good');
  });

  it('a signal for a handler and an update request are refused; the workflow goes on', async () => {
    const e = await env.pool.create({}, register);
    await e.bootstrap();
    const h = await e.start('gate', null);
    const signal = await storeBad(h.workflowId, 'signal', 'note', PAYLOADS[0]);
    const update = await storeBad(h.workflowId, 'update', 'echo', PAYLOADS[2]);
    await refused(signal);
    await refused(update);
    expect((await messageRow(update)).result).toMatchObject({ error: { name: 'PayloadNotSerializableError' } });
    await e.signal(h.workflowId, 'note', 'kept');
    await e.signal(h.workflowId, 'done', null);
    await expect(h.result({ timeout: '10s' })).resolves.toEqual({ notes: ['kept'] });
    expect((await h.describe()).history.filter((op) => op.kind === 'signal').map((op) => op.result)).toEqual(['kept']);
  });

  it('a workflow suspended by such a message goes on after resume', async () => {
    const e = await env.pool.create({}, register);
    await e.bootstrap();
    const h = await e.start('waiter', null);
    await e.suspend(h.workflowId, 'as the commit refusal left it');
    const id = await storeBad(h.workflowId, 'signal', 'go', PAYLOADS[1]);
    await e.resume(h.workflowId);
    await refused(id);
    await e.signal(h.workflowId, 'go', 'after resume');
    await expect(h.result({ timeout: '10s' })).resolves.toBe('after resume');
  });

  it("a child's notice that cannot be stored reaches the parent as the child's failure", async () => {
    const e = await env.pool.create({}, register);
    await e.bootstrap();
    const h = await e.start('parent', null, { workflowId: 'p1' });
    await waitFor(async () => (await e.describe('p1')).history.some((op) => op.kind === 'startChild'), 'the child started');
    await storeBad('p1', 'child', 'p1-child', '{"status":"completed","output":"\\u0000","error":null}');
    await expect(h.result({ timeout: '10s' })).resolves.toEqual({
      code: 'WEFT_CHILD_WORKFLOW_FAILED',
      cause: 'PayloadNotSerializableError',
    });
  });
});
