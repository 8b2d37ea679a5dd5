// Spans on a real PostgreSQL with the OpenTelemetry SDK's in-memory exporter registered globally,
// as an app registers its SDK: the engine imports @opentelemetry/api itself and finds it.
import * as otel from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { BasicTracerProvider, InMemorySpanExporter, ReadableSpan, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { quietLogger, useTestEngines, waitFor } from '../../../../test/support/engine.js';
import type { WorkflowContext } from '../common/types.js';
import { loadTracer, NOOP_TRACER, TracingSetup } from './tracing.js';

const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
const userTracer = () => otel.trace.getTracer('the-app');

class ThreeSteps {
  async run(ctx: WorkflowContext, input: { fail?: boolean }) {
    const a = await ctx.step('one', () => 1);
    // The app's own instrumentation inside a step (an HTTP client, say) nests under the step.
    const b = await ctx.step('two', () => userTracer().startActiveSpan('user.call', (s) => (s.end(), 2)));
    const c = await ctx.step(
      'three',
      () => {
        if (input.fail) throw new Error('three broke');
        return 3;
      },
      { retry: { maxAttempts: 2, initialInterval: 5 } },
    );
    return a + b + c;
  }
}

class StepSleepStep {
  async run(ctx: WorkflowContext) {
    await ctx.step('before', () => 'b');
    await ctx.sleep(30);
    return ctx.step('after', () => 'a');
  }
}

class ContinueOnce {
  async run(ctx: WorkflowContext, input: { again: boolean }) {
    await ctx.step('work', () => input.again);
    return input.again ? ctx.continueAsNew({ again: false }) : 'second run';
  }
}

const gates = new Map<string, () => void>();
/** A step that runs until the test opens its gate (its body rejects when the run is aborted). */
const gatedStep = (ctx: WorkflowContext, key: string) =>
  ctx.step('gated', ({ signal }) => {
    return new Promise<number>((resolve, reject) => {
      gates.set(key, () => resolve(2));
      signal.addEventListener('abort', () => reject(new Error('aborted')));
    });
  });
class Gated {
  async run(ctx: WorkflowContext, input: { key: string }) {
    await ctx.step('first', () => 1);
    await gatedStep(ctx, input.key);
    return 'done';
  }
}
class GatedFirst {
  async run(ctx: WorkflowContext, input: { key: string }) {
    await gatedStep(ctx, input.key);
    return 'done';
  }
}

const spansOf = (workflowId: string) => exporter.getFinishedSpans().filter((s) => s.attributes['weft.workflow.id'] === workflowId);
const workflowSpans = (id: string) => spansOf(id).filter((s) => s.name.startsWith('weft.workflow '));
const stepSpans = (id: string) => spansOf(id).filter((s) => s.name.startsWith('weft.step '));
const spanId = (s: ReadableSpan) => s.spanContext().spanId;
const parentId = (s: ReadableSpan) => s.parentSpanContext?.spanId;
const traceparent = (s: ReadableSpan) => `00-${s.spanContext().traceId}-${spanId(s)}-01`;
/** Waits until `get` returns exactly `n` spans, and returns them. */
async function exactly(n: number, get: () => ReadableSpan[], what: string): Promise<ReadableSpan[]> {
  return (await waitFor(() => (get().length === n ? get() : null), what))!;
}
const absent = () => Promise.reject(Object.assign(new Error("Cannot find package '@opentelemetry/api'"), { code: 'ERR_MODULE_NOT_FOUND' }));

describe('tracing (OpenTelemetry, real PostgreSQL)', () => {
  const env = useTestEngines();
  const traceOf = async (id: string) =>
    (await env.tdb.query<{ trace_context: string | null }>(`SELECT trace_context FROM weft.weft_workflows WHERE id = $1`, [id]))[0]
      .trace_context;

  beforeAll(() => {
    otel.context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    otel.trace.setGlobalTracerProvider(provider);
  });
  afterAll(async () => {
    await provider.shutdown();
    otel.trace.disable();
    otel.context.disable();
  });

  it('a 3-step workflow is one workflow span, a child of the starter, with three step spans under it', async () => {
    const e = await env.pool.create({ engineId: 'T1' }, (x) => x.register('three', ThreeSteps));
    await e.bootstrap();
    const request = userTracer().startSpan('http.request');
    const h = await otel.context.with(otel.trace.setSpan(otel.context.active(), request), () => e.start('three', {}));
    request.end();
    await expect(h.result({ timeout: '5s' })).resolves.toBe(6);
    const [wf] = await exactly(1, () => workflowSpans(h.workflowId), 'workflow span');

    expect(wf.name).toBe('weft.workflow three');
    expect(wf.attributes).toMatchObject({
      'weft.workflow.id': h.workflowId,
      'weft.workflow.type': 'three',
      'weft.workflow.run_number': 1,
      'weft.engine.id': 'T1',
      'weft.workflow.outcome': 'completed',
    });
    expect(wf.status.code).toBe(otel.SpanStatusCode.UNSET);
    expect(parentId(wf)).toBe(request.spanContext().spanId);
    expect(wf.spanContext().traceId).toBe(request.spanContext().traceId);

    const steps = stepSpans(h.workflowId).sort((x, y) => Number(x.attributes['weft.step.seq']) - Number(y.attributes['weft.step.seq']));
    expect(steps.map((s) => s.name)).toEqual(['weft.step one', 'weft.step two', 'weft.step three']);
    steps.forEach((s, seq) => {
      expect(parentId(s)).toBe(spanId(wf));
      expect(s.attributes).toMatchObject({
        'weft.step.seq': seq,
        'weft.step.name': ['one', 'two', 'three'][seq],
        'weft.step.attempts': 1,
        'weft.step.outcome': 'completed',
        'weft.workflow.id': h.workflowId,
        'weft.workflow.type': 'three',
      });
    });
    const user = exporter.getFinishedSpans().find((s) => s.name === 'user.call' && parentId(s) === spanId(steps[1]));
    expect(user).toBeDefined();
    // The run's span rode on its first commit, replacing the starter's context written with the start.
    expect(await traceOf(h.workflowId)).toBe(traceparent(wf));
  });

  it("a failing step's span has error status and one exception per attempt; the workflow span fails too", async () => {
    const e = await env.pool.create({ engineId: 'T2' }, (x) => x.register('three', ThreeSteps));
    await e.bootstrap();
    const h = await e.start('three', { fail: true });
    await expect(h.result({ timeout: '5s' })).rejects.toMatchObject({ code: 'WEFT_WORKFLOW_FAILED' });
    const [wf] = await exactly(1, () => workflowSpans(h.workflowId), 'workflow span');
    const three = stepSpans(h.workflowId).find((s) => s.attributes['weft.step.name'] === 'three')!;
    expect(three.status).toEqual({ code: otel.SpanStatusCode.ERROR, message: 'three broke' });
    expect(three.attributes).toMatchObject({ 'weft.step.attempts': 2, 'weft.step.outcome': 'failed' });
    expect(three.events.filter((ev) => ev.name === 'exception')).toHaveLength(2);
    expect(parentId(wf)).toBeUndefined(); // started outside any span: a root
    expect(wf.attributes['weft.workflow.outcome']).toBe('failed');
    expect(wf.status.code).toBe(otel.SpanStatusCode.ERROR);
    expect(stepSpans(h.workflowId).filter((s) => s.status.code === otel.SpanStatusCode.ERROR)).toEqual([three]);
  });

  it('a run that parks ends its span; the wake starts the next one, linked to it, and replays make no step spans', async () => {
    const e = await env.pool.create({ engineId: 'T3' }, (x) => x.register('sss', StepSleepStep));
    await e.bootstrap();
    const h = await e.start('sss', {});
    await expect(h.result({ timeout: '5s' })).resolves.toBe('a');
    const [first, second] = await exactly(2, () => workflowSpans(h.workflowId), 'two spans');
    expect(first.attributes).toMatchObject({ 'weft.workflow.outcome': 'parked', 'weft.workflow.waiting': ['sleep'] });
    expect(second.attributes).toMatchObject({ 'weft.workflow.outcome': 'completed', 'weft.workflow.replayed_operations': 0 });
    expect(second.links.map((l: otel.Link) => l.context.spanId)).toEqual([spanId(first)]);
    const byName = Object.fromEntries(stepSpans(h.workflowId).map((s) => [s.attributes['weft.step.name'], s]));
    expect(parentId(byName.before)).toBe(spanId(first));
    expect(parentId(byName.after)).toBe(spanId(second));
    expect(stepSpans(h.workflowId)).toHaveLength(2);
  });

  it('continue-as-new ends the run span as continued_as_new; the next run is a root span linked to it', async () => {
    const e = await env.pool.create({ engineId: 'T9' }, (x) => x.register('continue-once', ContinueOnce));
    await e.bootstrap();
    const h = await e.start('continue-once', { again: true });
    await expect(h.result({ timeout: '5s' })).resolves.toBe('second run');
    const [first, second] = await exactly(2, () => workflowSpans(h.workflowId), 'two runs, two spans');
    expect(first.attributes).toMatchObject({ 'weft.workflow.outcome': 'continued_as_new', 'weft.workflow.run_number': 1 });
    expect(second.attributes).toMatchObject({ 'weft.workflow.outcome': 'completed', 'weft.workflow.run_number': 2 });
    expect(second.links.map((l: otel.Link) => l.context.spanId)).toEqual([spanId(first)]);
    expect(parentId(second)).toBeUndefined();
  });

  it("the start stores the starter's context; a run recovered before its first commit links to it", async () => {
    // A's only run is aborted in its first step by a shutdown (nothing committed); B recovers it.
    const a = await env.pool.create({ engineId: 'T4A' }, (x) => x.register('gated', GatedFirst));
    await a.bootstrap();
    const request = userTracer().startSpan('http.request');
    const h = await otel.context.with(otel.trace.setSpan(otel.context.active(), request), () => a.start('gated', { key: 'recover' }));
    request.end();
    const { traceId, spanId: requestId } = request.spanContext();
    await waitFor(() => gates.has('recover'), 'gated step on A');
    expect(await traceOf(h.workflowId)).toBe(`00-${traceId}-${requestId}-01`);
    gates.delete('recover');
    await a.dispose();
    const b = await env.pool.create({ engineId: 'T4B' }, (x) => x.register('gated', GatedFirst));
    await b.bootstrap();
    await waitFor(() => gates.has('recover'), 'gated step on B');
    gates.get('recover')!();
    await expect(b.result(h.workflowId, { timeout: '5s' })).resolves.toBe('done');
    const ofEngine = (engineId: string) => workflowSpans(h.workflowId).filter((s) => s.attributes['weft.engine.id'] === engineId);
    const [spanA] = await exactly(1, () => ofEngine('T4A'), "A's span");
    const [spanB] = await exactly(1, () => ofEngine('T4B'), "B's span");
    expect(parentId(spanA)).toBe(requestId);
    expect(parentId(spanB)).toBeUndefined(); // recovery is no child of the request
    expect(spanB.links.map((l: otel.Link) => l.context.spanId)).toEqual([requestId]);
  });

  it("a delayed start's run, launched by the timer loop, is a root: the loop's context is not the workflow's", async () => {
    const e = await env.pool.create({ engineId: 'T4' }, (x) => x.register('three', ThreeSteps));
    await e.bootstrap();
    const request = userTracer().startSpan('http.request');
    const h = await otel.context.with(otel.trace.setSpan(otel.context.active(), request), () => e.start('three', {}, { startAfter: 50 }));
    request.end();
    await expect(h.result({ timeout: '5s' })).resolves.toBe(6);
    const [wf] = await exactly(1, () => workflowSpans(h.workflowId), 'workflow span');
    expect(parentId(wf)).toBeUndefined();
    expect(stepSpans(h.workflowId).map((s) => parentId(s))).toEqual([spanId(wf), spanId(wf), spanId(wf)]);
  });

  it("runs launched after their start (a queue's admission or hand-off, a delayed or debounced start) link to the starter's context", async () => {
    const slow = { engineId: 'T4L', timerPollInterval: '60s', queues: { q: { concurrency: 1 } } } as const;
    const e = await env.pool.create(slow, (x) => x.register('three', ThreeSteps));
    await e.bootstrap();
    const request = userTracer().startSpan('http.request');
    const ids = await otel.context.with(otel.trace.setSpan(otel.context.active(), request), async () => [
      // Three into a queue of one: the first admitted by a pass, the next ones by the end before them.
      ...(await Promise.all([1, 2, 3].map((n) => e.start('three', {}, { workflowId: `later-q${n}`, queue: 'q' })))),
      await e.start('three', {}, { workflowId: 'later-delayed', startAfter: 20 }),
      await e.start('three', {}, { debounce: { key: 'k', delay: 20 } }),
    ]);
    request.end();
    for (const h of ids) {
      await expect(h.result({ timeout: '10s' })).resolves.toBe(6);
      const [wf] = await exactly(1, () => workflowSpans(h.workflowId), `${h.workflowId}'s workflow span`);
      expect(parentId(wf), h.workflowId).toBeUndefined(); // launched by a loop or another run's end, not by the request
      expect(
        wf.links.map((l: otel.Link) => l.context.spanId),
        h.workflowId,
      ).toEqual([request.spanContext().spanId]);
    }
  });

  it("a takeover: the new owner's workflow span links to the previous owner's", async () => {
    const WL = { ownership: 'workflow-lease' as const, workflowClaimTtl: 900, workflowClaimRenewInterval: 300 };
    const warnings: Error[] = [];
    const onWarning = (w: Error) => warnings.push(w);
    const engine = async (id: string, extra = {}) => {
      const x = await env.pool.create({ ...WL, engineId: id, onWarning, ...extra }, (y) => y.register('gated', Gated));
      await x.bootstrap();
      return x;
    };
    // A renews nothing (manual background tasks): it loses the claim while its step runs.
    const a = await engine('TA', { backgroundTasks: 'manual' });
    const h = await a.start('gated', { key: 'take' });
    await waitFor(() => gates.has('take'), 'gated step on A');
    const resolveA = gates.get('take')!;
    // A's first commit (step 'first') stored A's workflow span before B could load the run.
    const stored = await waitFor(() => traceOf(h.workflowId), "A's span stored");
    const b = await engine('TB');
    await waitFor(() => gates.get('take') !== resolveA, 'B took over and re-runs the in-flight step', 10_000);
    gates.get('take')!();
    await expect(b.result(h.workflowId, { timeout: '5s' })).resolves.toBe('done');
    resolveA(); // A's late result is refused by the fence: A drops the run and its span ends
    const ofEngine = (engineId: string) => workflowSpans(h.workflowId).filter((s) => s.attributes['weft.engine.id'] === engineId);
    const [spanA] = await exactly(1, () => ofEngine('TA'), "A's span ended");
    const [spanB] = await exactly(1, () => ofEngine('TB'), "B's span ended");

    expect(stored).toBe(traceparent(spanA));
    expect(spanA.attributes['weft.workflow.outcome']).toBe('stopped');
    expect(spanB.links.map((l: otel.Link) => l.context.spanId)).toEqual([spanId(spanA)]);
    expect(spanB.links[0].context.traceId).toBe(spanA.spanContext().traceId);
    expect(spanB.attributes).toMatchObject({ 'weft.workflow.outcome': 'completed', 'weft.workflow.replayed_operations': 1 });
    // B replayed 'first' (no span) and ran 'gated' live.
    const stepsB = stepSpans(h.workflowId).filter((s) => parentId(s) === spanId(spanB));
    expect(stepsB.map((s) => s.attributes['weft.step.name'])).toEqual(['gated']);
    // A learns of the loss when its late result is refused, which may come after its span ended.
    await waitFor(() => warnings.some((w) => w.name === 'WeftWorkflowClaimLostWarning'), "A's claim-lost warning");
  });

  it('without @opentelemetry/api the loader gives the no-op tracer: no spans, nothing stored, nothing logged', async () => {
    const logger = quietLogger();
    const setup: TracingSetup = { enabled: true, engineId: 'x', logger, load: absent };
    expect(await loadTracer(setup)).toBe(NOOP_TRACER);
    expect(await loadTracer({ ...setup, enabled: false, load: () => import('@opentelemetry/api') })).toBe(NOOP_TRACER);
    expect(logger.lines).toEqual([]);

    const e = await env.pool.create({ engineId: 'T5', logger, loadTracingApi: absent }, (x) => x.register('three', ThreeSteps));
    await e.bootstrap();
    const parent = userTracer().startSpan('http.request');
    const h = await otel.context.with(otel.trace.setSpan(otel.context.active(), parent), () => e.start('three', {}));
    parent.end();
    await expect(h.result({ timeout: '5s' })).resolves.toBe(6);
    expect(spansOf(h.workflowId)).toEqual([]);
    expect(exporter.getFinishedSpans().filter((s) => s.attributes['weft.engine.id'] === 'T5')).toEqual([]);
    expect(await traceOf(h.workflowId)).toBeNull();
    expect(logger.lines).toEqual([]);
  });

  it('an unusable API is logged once and traces nothing; a tracer that throws never fails a workflow', async () => {
    const logger = quietLogger();
    expect(await loadTracer({ enabled: true, engineId: 'x', logger, load: async () => ({ trace: {} }) })).toBe(NOOP_TRACER);
    expect(logger.lines).toEqual([expect.stringContaining('not a usable version')]);

    // Step spans throw on start: the workflow still completes, and the failure is logged once.
    const real = otel.trace.getTracer('weft-test');
    const tracer = {
      startSpan: (name: string, o?: otel.SpanOptions, c?: otel.Context) => {
        if (name.startsWith('weft.step')) throw new Error('exporter exploded');
        return real.startSpan(name, o, c);
      },
    };
    const broken = { ...otel, trace: Object.assign(Object.create(otel.trace), { getTracer: () => tracer }) };
    const logs = quietLogger();
    const e = await env.pool.create({ engineId: 'T6', logger: logs, loadTracingApi: async () => broken }, (x) =>
      x.register('three', ThreeSteps),
    );
    await e.bootstrap();
    const h1 = await e.start('three', {});
    const h2 = await e.start('three', {});
    await expect(h1.result({ timeout: '5s' })).resolves.toBe(6);
    await expect(h2.result({ timeout: '5s' })).resolves.toBe(6);
    expect(logs.lines.filter((l) => l.includes('Tracing failed'))).toEqual([expect.stringContaining('exporter exploded')]);
    expect(stepSpans(h1.workflowId)).toEqual([]);
    await waitFor(() => workflowSpans(h2.workflowId).length === 1, 'workflow spans still recorded');
  });
});
