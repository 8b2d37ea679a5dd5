// A port, written for Weft, of Temporal's samples-typescript `activities-examples`: an HTTP call
// as a retried step bounded in time (scheduleToCloseTimeout -> retry.maxElapsed), asynchronous
// completion from elsewhere (CompleteAsyncError + AsyncCompletionClient -> { complete:
// 'external' } + engine.completeStep on another engine), and a fetch that heartbeats its progress
// and fails with the application's own typed error, which the caller of result() reaches whole.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  ApplicationError,
  currentStep,
  NonRetryableError,
  StepFailedError,
  WorkflowFailedError,
  type StepArgs,
  type WeftEngine,
  type WorkflowContext,
} from '@weft/nest';
import { useTestEngines, waitFor } from '../support/engine.js';

let baseUrl = '';
let server: http.Server;
/** What the fake service answers, by path: a body, sent with or without Content-Length. */
const answers: Record<string, { status?: number; body: string; length?: boolean; failFirst?: number }> = {};
const served: Record<string, number> = {};

/** makeHTTPRequest: the answer field of a JSON document, retried fast, at most 30 s in all. */
class Example {
  async run(ctx: WorkflowContext, input: { path: string }) {
    const answer = await ctx.step(
      'makeHTTPRequest',
      async ({ signal }: StepArgs) => {
        const res = await fetch(`${baseUrl}${input.path}`, { signal });
        if (!res.ok) throw new Error(`HTTP ${res.status}`);
        return ((await res.json()) as { args: { answer: string } }).args.answer;
      },
      { retry: { initialInterval: '50ms', maxAttempts: 2, maxElapsed: '30s' } },
    );
    return `The answer is ${answer}`;
  }
}

/** completeSomethingAsync: the step hands its token to work done elsewhere, which completes it. */
class AsyncCompletion {
  async run(ctx: WorkflowContext) {
    return ctx.step(
      'completeSomethingAsync',
      ({ completionToken }: StepArgs) => {
        pendingWork.push(completionToken!);
      },
      { complete: 'external', timeout: '30s' },
    );
  }
}
const pendingWork: string[] = [];

/** cancellableFetch: reads the body chunk by chunk, heartbeating the fraction read. */
class CancellableFetch {
  async run(ctx: WorkflowContext, input: { path: string }) {
    const bytes = await ctx.step(
      'cancellableFetch',
      async ({ signal }: StepArgs) => {
        const res = await fetch(`${baseUrl}${input.path}`, { signal });
        const length = res.headers.get('content-length');
        if (length === null) {
          throw new NonRetryableError('expected Content-Length header to be set', {
            code: 'NO_CONTENT_LENGTH',
            details: { path: input.path },
          });
        }
        let read = 0;
        const chunks: Buffer[] = [];
        for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
          read += chunk.length;
          chunks.push(Buffer.from(chunk));
          currentStep()!.heartbeat(read / Number(length));
        }
        progress[ctx.workflowId] = currentStep()!.lastHeartbeat as number;
        return Buffer.concat(chunks).length;
      },
      { heartbeatTimeout: '5s', retry: { maxAttempts: 3, initialInterval: '50ms' } },
    );
    return { bytes };
  }
}
const progress: Record<string, number> = {};

const register = (e: WeftEngine) =>
  e.register('example', Example).register('async-completion', AsyncCompletion).register('cancellable-fetch', CancellableFetch);

describe("Temporal's activities-examples, ported to Weft", () => {
  const env = useTestEngines();

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      const a = answers[req.url ?? ''];
      served[req.url ?? ''] = (served[req.url ?? ''] ?? 0) + 1;
      if (!a) return void res.writeHead(404).end();
      if (a.failFirst && served[req.url!] <= a.failFirst) return void res.writeHead(503).end();
      const body = Buffer.from(a.body);
      res.writeHead(a.status ?? 200, a.length === false ? {} : { 'content-length': String(body.length) });
      // In several writes, so a reader sees more than one chunk.
      for (let i = 0; i < body.length; i += 1024) res.write(body.subarray(i, i + 1024));
      res.end();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  it('makeHTTPRequest: "The answer is 42", after one failed attempt retried 50 ms later', async () => {
    answers['/get?answer=42'] = { body: JSON.stringify({ args: { answer: '42' } }), failFirst: 1 };
    const e = await env.pool.create({}, register);
    await e.bootstrap();
    const h = await e.start('example', { path: '/get?answer=42' });
    await expect(h.result()).resolves.toBe('The answer is 42');
    expect(served['/get?answer=42']).toBe(2);
    const [op] = (await e.describe(h.workflowId)).history;
    expect(op).toMatchObject({ name: 'makeHTTPRequest', status: 'completed', attempts: 2 });
  });

  it('makeHTTPRequest: a service that keeps failing fails the workflow; result() reaches the error of the last attempt', async () => {
    answers['/get?answer=down'] = { body: '', failFirst: 100 };
    const e = await env.pool.create({}, register);
    await e.bootstrap();
    const h = await e.start('example', { path: '/get?answer=down' });
    const err = await h.result().catch((x: unknown) => x);
    expect(err).toBeInstanceOf(WorkflowFailedError);
    const step = (err as WorkflowFailedError).cause as StepFailedError;
    expect(step).toBeInstanceOf(StepFailedError);
    expect(step).toMatchObject({ stepName: 'makeHTTPRequest', attempts: 2 });
    expect(step.cause).toMatchObject({ name: 'Error', message: 'HTTP 503' });
  });

  it('async completion: work done on another engine completes the step with "Job\'s done!"', async () => {
    const worker = await env.pool.create({}, register);
    await worker.bootstrap();
    const elsewhere = await env.pool.create({}); // "a different process or machine": runs none of it
    const h = await worker.start('async-completion', {});
    const token = await waitFor(() => pendingWork.shift() ?? '', 'the step to hand out its token');
    await elsewhere.completeStep(token, "Job's done!");
    await expect(h.result()).resolves.toBe("Job's done!");
    await expect(elsewhere.completeStep(token, 'twice')).rejects.toMatchObject({ code: 'WEFT_STEP_ALREADY_COMPLETED' });
  });

  it('cancellableFetch: reads the whole body, its last heartbeat the whole fraction', async () => {
    answers['/big'] = { body: 'x'.repeat(64 * 1024) };
    const e = await env.pool.create({}, register);
    await e.bootstrap();
    const h = await e.start('cancellable-fetch', { path: '/big' });
    await expect(h.result()).resolves.toEqual({ bytes: 64 * 1024 });
    expect(progress[h.workflowId]).toBe(1);
  });

  it("cancellableFetch: no Content-Length is the application's own non-retryable error, whole at result()", async () => {
    answers['/chunked'] = { body: 'y'.repeat(4096), length: false };
    const e = await env.pool.create({}, register);
    await e.bootstrap();
    const h = await e.start('cancellable-fetch', { path: '/chunked' });
    const err = (await h.result().catch((x: unknown) => x)) as WorkflowFailedError;
    const step = err.cause as StepFailedError;
    expect(step.attempts).toBe(1); // not retried
    expect(step.cause).toBeInstanceOf(NonRetryableError);
    expect(step.cause).toBeInstanceOf(ApplicationError);
    expect(step.cause).toMatchObject({
      message: 'expected Content-Length header to be set',
      code: 'NO_CONTENT_LENGTH',
      details: { path: '/chunked' },
    });
  });
});
