// Interceptors (docs/interceptors.md) on a real PostgreSQL: the order of the hooks, the headers a
// start stores (encoded under a codec) and hands to every run and step (after a takeover too, and
// to children), and a start or signal a hook refuses writes nothing.
import { randomBytes } from 'node:crypto';
import { useTestEngines, waitFor } from '../../../../test/support/engine.js';
import { AesGcmCodec } from '../common/aes-gcm-codec.js';
import type { RunInput, StartInput, StepInput, WeftInterceptor } from '../common/interceptors.js';
import { InvalidArgumentError } from '../common/errors.js';
import type { WorkflowContext, WorkflowDefinition } from '../common/types.js';
import { currentStep } from './als.js';
import type { WeftEngine } from './engine.js';
import { EngineInterceptors } from './interceptors.js';

const log: string[] = [];
const seen: Array<{ where: string; headers: Readonly<Record<string, string>> }> = [];

/** Logs each hook as `<tag>:<hook>` on the way in and `/<tag>:<hook>` on the way out; adds a header at start. */
class Tagging implements WeftInterceptor {
  constructor(private readonly tag: string) {}
  async start(input: StartInput, next: (i: StartInput) => Promise<string>) {
    log.push(`${this.tag}:start`);
    const id = await next({ ...input, headers: { ...input.headers, [this.tag]: `${this.tag}-${Object.keys(input.headers).length}` } });
    log.push(`/${this.tag}:start`);
    return id;
  }
  async run(input: RunInput, next: (i: RunInput) => Promise<unknown>) {
    log.push(`${this.tag}:run`);
    seen.push({ where: `${this.tag}:run:${input.workflowType}`, headers: input.headers });
    return next(input);
  }
  async step(input: StepInput, next: (i: StepInput) => Promise<unknown>) {
    log.push(`${this.tag}:step:${input.stepName}:${input.attempt}:${currentStep()?.attempt}`);
    seen.push({ where: `${this.tag}:step:${input.stepName}`, headers: input.headers });
    const out = await next(input);
    log.push(`/${this.tag}:step:${input.stepName}`);
    return out;
  }
}

let failOnce = true;

class Parent {
  async run(ctx: WorkflowContext, input: { n: number }) {
    const a = await ctx.step(
      'flaky',
      () => {
        log.push('body:flaky');
        if (failOnce) {
          failOnce = false;
          throw new Error('once');
        }
        return input.n + 1;
      },
      { retry: { initialInterval: '10ms' } },
    );
    const kid = await ctx.executeChild<string>('icpt-kid', {});
    const { workflowId } = await ctx.startWorkflow('icpt-kid', {}, { workflowId: 'detached-1' });
    return { a, kid, workflowId };
  }
}

class Kid {
  async run(ctx: WorkflowContext) {
    return ctx.step('kid-step', () => 'kid');
  }
}

/** Steps before and after a signal: what runs after it runs on whichever engine holds the run then. */
class Waiter {
  async run(ctx: WorkflowContext) {
    await ctx.step('before', () => 1);
    await ctx.waitForSignal('go', { timeout: '60s' });
    return ctx.step('after', () => 2);
  }
}

class Listener {
  got: unknown[] = [];
  onPing(p: unknown) {
    this.got.push(p);
  }
  async run(ctx: WorkflowContext) {
    await ctx.condition(() => this.got.length > 0, { timeout: '60s' });
    return this.got;
  }
}

const defs: WorkflowDefinition[] = [
  { name: 'icpt-parent', factory: () => new Parent() as never },
  { name: 'icpt-kid', factory: () => new Kid() as never },
  { name: 'icpt-waiter', factory: () => new Waiter() as never },
  { name: 'icpt-listener', factory: () => new Listener() as never, signalHandlers: { ping: 'onPing' } },
];
const register = (e: WeftEngine) => defs.forEach((d) => e.register(d));

describe('interceptors (real PostgreSQL)', () => {
  const env = useTestEngines();
  beforeEach(() => {
    log.length = 0;
    seen.length = 0;
  });

  const rawHeaders = async (id: string) =>
    (await env.tdb.query<{ headers: unknown }>(`SELECT headers FROM weft.weft_workflows WHERE id = $1`, [id]))[0]?.headers;
  const count = async () => (await env.tdb.query<{ n: number }>(`SELECT count(*)::int AS n FROM weft.weft_workflows`))[0].n;

  it('runs the hooks in order, stores the headers the start hooks leave, and gives them to every run and step, and to children', async () => {
    const e = await env.pool.create({ interceptors: [new Tagging('a'), new Tagging('b')] }, register);
    await e.bootstrap();
    const h = await e.start('icpt-parent', { n: 1 }, { workflowId: 'order-1' });
    expect(await h.result({ timeout: '30s' })).toEqual({ a: 2, kid: 'kid', workflowId: 'detached-1' });
    await e.handle('detached-1').result({ timeout: '30s' });

    // The first interceptor is the outermost: its start begins first and ends last (the run is launched inside them).
    expect(log.filter((l) => l.endsWith(':start'))).toEqual(['a:start', 'b:start', '/b:start', '/a:start']);
    // Each step attempt goes through both, inside currentStep(), around the body.
    const flaky = log.filter((l) => l.includes('flaky'));
    expect(flaky).toEqual([
      'a:step:flaky:1:1',
      'b:step:flaky:1:1',
      'body:flaky',
      'a:step:flaky:2:2',
      'b:step:flaky:2:2',
      'body:flaky',
      '/b:step:flaky',
      '/a:step:flaky',
    ]);
    expect(log.filter((l) => l.endsWith(':run'))).toEqual(['a:run', 'b:run', 'a:run', 'b:run', 'a:run', 'b:run']);

    // Stored as the last hook passed them; children and ctx.startWorkflow inherit them (no start hook runs for them).
    const headers = { a: 'a-0', b: 'b-1' };
    expect(await rawHeaders('order-1')).toEqual(headers);
    expect(await rawHeaders('order-1/1')).toEqual(headers);
    expect(await rawHeaders('detached-1')).toEqual(headers);
    for (const s of seen) expect(s.headers, s.where).toEqual(headers);
    expect(seen.map((s) => s.where)).toEqual(expect.arrayContaining(['a:run:icpt-kid', 'b:step:kid-step']));
  });

  it('stores the headers encoded when a codec is set', async () => {
    const e = await env.pool.create(
      {
        interceptors: [{ start: (i, next) => next({ ...i, headers: { tenant: 'SECRET-TENANT-9' } }) }],
        codec: new AesGcmCodec('h1', randomBytes(32)),
      },
      register,
    );
    const h = await e.start('icpt-kid', {}, { workflowId: 'enc-1' });
    await h.result({ timeout: '30s' });
    const raw = await rawHeaders('enc-1');
    expect(raw).toMatchObject({ 'weft:codec': 'h1' });
    expect(JSON.stringify(raw)).not.toContain('SECRET-TENANT-9');
  });

  it('refuses a start whose hook throws, or whose headers are not storable, writing nothing', async () => {
    const throwing: WeftInterceptor = {
      start: async () => {
        throw new Error('no tenant in this request');
      },
    };
    const e = await env.pool.create({ interceptors: [throwing] }, register);
    const before = await count();
    const refused = await e.start('icpt-kid', {}, { workflowId: 'refused-1' }).catch((err: unknown) => err);
    expect(refused).toMatchObject({ code: 'WEFT_INTERCEPTOR_FAILED', hook: 'start', cause: { message: 'no tenant in this request' } });

    const typed = await env.pool.create(
      {
        interceptors: [
          {
            start: async () => {
              throw new InvalidArgumentError('tenant', 'is missing');
            },
          },
        ],
      },
      register,
    );
    await expect(typed.start('icpt-kid', {})).rejects.toBeInstanceOf(InvalidArgumentError);

    const bad = (headers: unknown) =>
      env.pool.create({ interceptors: [{ start: (i, next) => next({ ...i, headers: headers as Record<string, string> }) }] }, register);
    await expect((await bad({ n: 1 })).start('icpt-kid', {})).rejects.toMatchObject({
      code: 'WEFT_INVALID_ARGUMENT',
      argument: 'headers.n',
    });
    await expect((await bad({ big: 'x'.repeat(9000) })).start('icpt-kid', {})).rejects.toMatchObject({ argument: 'headers' });
    const many = Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`k${i}`, 'v']));
    await expect((await bad(many)).start('icpt-kid', {})).rejects.toMatchObject({ argument: 'headers' });
    await expect((await bad({ nul: 'a\u0000b' })).start('icpt-kid', {})).rejects.toMatchObject({ argument: 'headers.nul' });
    expect(await count()).toBe(before);

    // An error of the start itself passes through the chain as it is.
    const ok = await env.pool.create({ interceptors: [new Tagging('x')] }, register);
    await ok.start('icpt-kid', {}, { workflowId: 'dup-1' });
    await expect(ok.start('icpt-kid', {}, { workflowId: 'dup-1', idPolicy: 'reject-duplicate' })).rejects.toMatchObject({
      code: 'WEFT_WORKFLOW_ALREADY_STARTED',
    });
  });

  it('gives the stored headers to the run and steps of an engine that takes the workflow over', async () => {
    const first = await env.pool.create(
      { ownership: 'workflow-lease', engineId: 'icpt-first', interceptors: [new Tagging('t')], shutdownGracePeriod: 0 },
      register,
    );
    await first.bootstrap();
    const h = await first.start('icpt-waiter', {}, { workflowId: 'taken-1' });
    await waitFor(async () => (await first.describe(h.workflowId)).history.some((o) => o.name === 'before'), 'the first step');
    await first.dispose();
    seen.length = 0;
    // The second engine's interceptor adds nothing at start: what it sees can only come from the row.
    const second = await env.pool.create(
      {
        ownership: 'workflow-lease',
        engineId: 'icpt-second',
        interceptors: [
          {
            // Real I/O before next (a lazy import, a KMS call): the replay must wait for run() to be called.
            run: async (i, next) => {
              await new Promise((r) => setTimeout(r, 100));
              return next(i);
            },
            step: (i, next) => next(i),
          },
          new Tagging('u'),
        ],
      },
      register,
    );
    await second.bootstrap();
    await second.signal(h.workflowId, 'go', null);
    await expect(second.handle(h.workflowId).result({ timeout: '30s' })).resolves.toBe(2);
    expect(seen.map((s) => s.where)).toEqual(['u:run:icpt-waiter', 'u:step:after']);
    for (const s of seen) expect(s.headers).toEqual({ t: 't-0' });
  });

  it.each([
    ['', 'plain', {}],
    [' under a codec', 'coded', { codec: new AesGcmCodec('h2', randomBytes(32)) }],
  ])(
    'gives the stored headers to runs that begin later than their start (queued, handed a slot, delayed, debounced), read with no load%s',
    async (_, tag, codec) => {
      const e = await env.pool.create({ interceptors: [new Tagging('q')], queues: { one: { concurrency: 1 } }, ...codec }, register);
      await e.bootstrap();
      // Launched from what the admission, the hand-off or the fire read: none loads its row again.
      const loaded: string[] = [];
      const workflows = e.store.workflows;
      const loadMany = workflows.loadMany.bind(workflows);
      vi.spyOn(workflows, 'loadMany').mockImplementation((ids) => (loaded.push(...ids), loadMany(ids)));
      const starts = [
        // Into a queue of one: the first admitted by a pass, the next ones by the end before them.
        ...(await Promise.all([1, 2, 3].map((n) => e.start('icpt-kid', {}, { workflowId: `${tag}-queued-${n}`, queue: 'one' })))),
        await e.start('icpt-kid', {}, { workflowId: `${tag}-delayed`, startAfter: '50ms' }),
        await e.start('icpt-kid', {}, { debounce: { key: tag, delay: '50ms' } }),
      ];
      for (const h of starts) await expect(h.result({ timeout: '30s' })).resolves.toBe('kid');
      // Each started with q's header, so each run and its step must see it.
      expect(seen.filter((s) => s.where.startsWith('q:run')).length).toBe(5);
      for (const s of seen) expect(s.headers, s.where).toEqual({ q: 'q-0' });
      expect(loaded).toEqual([]);
    },
  );

  it('runs signal hooks around engine.signal: they may change the payload, and a throw stores nothing', async () => {
    const e = await env.pool.create(
      {
        interceptors: [
          {
            signal: async (i, next) => {
              if (i.payload === 'refuse') throw new Error('refused by hook');
              return next({ ...i, payload: { wrapped: i.payload, name: i.signalName } });
            },
          },
        ],
      },
      register,
    );
    const h = await e.start('icpt-listener', {}, { workflowId: 'sig-1' });
    await expect(e.signal(h.workflowId, 'ping', 'refuse')).rejects.toMatchObject({ code: 'WEFT_INTERCEPTOR_FAILED', hook: 'signal' });
    expect((await env.tdb.query(`SELECT 1 FROM weft.weft_messages WHERE workflow_id = 'sig-1'`)).length).toBe(0);
    await h.signal('ping', 7);
    await expect(h.result({ timeout: '30s' })).resolves.toEqual([{ wrapped: 7, name: 'ping' }]);
  });

  it('refuses a bad interceptors option at start-up; an empty list is no interceptors at all', async () => {
    expect(EngineInterceptors.from([])).toBeNull();
    expect(EngineInterceptors.from(undefined)).toBeNull();
    await expect(env.pool.create({ interceptors: [{} as WeftInterceptor] })).rejects.toMatchObject({ code: 'WEFT_INVALID_CONFIGURATION' });
    await expect(env.pool.create({ interceptors: [{ run: 'x' } as unknown as WeftInterceptor] })).rejects.toMatchObject({
      code: 'WEFT_INVALID_CONFIGURATION',
      option: 'interceptors[0].run',
    });
    const e = await env.pool.create({ interceptors: [{ signal: (i, next) => next(i) }] });
    expect((e as unknown as { options: { interceptors: EngineInterceptors } }).options.interceptors).toMatchObject({
      start: undefined,
      run: undefined,
      step: undefined,
    });
  });
});
