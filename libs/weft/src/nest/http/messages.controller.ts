import { Body, Get, Headers, HttpCode, type MessageEvent, Param, Post, Query, Sse, UseFilters } from '@nestjs/common';
import { Observable } from 'rxjs';
import { WorkflowNotFoundError } from '../../common/errors.js';
import type { StreamEntry } from '../../common/types.js';
import { WeftEngine } from '../../engine/engine.js';
import { objectBody, parseCompletionBody, parseResultTimeout, parseStepError, parseStreamStart, parseUpdateBody } from './requests.js';
import { WeftExceptionFilter } from './weft-exception.filter.js';

/** Signal, update, query, event and stream routes. */
@UseFilters(WeftExceptionFilter)
export class WeftMessagesController {
  constructor(private readonly engine: WeftEngine) {}

  @Post(':id/signal/:name')
  @HttpCode(202)
  async signal(@Param('id') id: string, @Param('name') name: string, @Body() body: unknown) {
    const { payload } = objectBody(body, ['payload']);
    await this.engine.signal(id, name, payload ?? null);
    return { workflowId: id, signal: name, accepted: true };
  }

  @Post(':id/update/:name')
  @HttpCode(200)
  async update(@Param('id') id: string, @Param('name') name: string, @Body() body: unknown) {
    const { args, timeout } = parseUpdateBody(body);
    const result = await this.engine.update(id, name, args ?? null, timeout === undefined ? {} : { timeout });
    return { workflowId: id, update: name, result };
  }

  @Post(':id/query/:name')
  @HttpCode(200)
  async query(@Param('id') id: string, @Param('name') name: string, @Body() body: unknown) {
    const { args } = objectBody(body, ['args']);
    return { workflowId: id, query: name, result: await this.engine.query(id, name, args) };
  }

  @Get(':id/query/:name')
  async queryNoArgs(@Param('id') id: string, @Param('name') name: string) {
    return { workflowId: id, query: name, result: await this.engine.query(id, name) };
  }

  /** Completes a step run with `{ complete: 'external' }` of this workflow (docs/long-steps.md), once. */
  @Post(':id/steps/complete')
  @HttpCode(200)
  async completeStep(@Param('id') id: string, @Body() body: unknown) {
    const { token, result } = parseCompletionBody(id, body, 'result');
    await this.engine.completeStep(token, result ?? null);
    return { workflowId: id, completed: true };
  }

  /** Fails that step's attempt with `error` ({ message, name?, code?, details?, nonRetryable? }), once. */
  @Post(':id/steps/fail')
  @HttpCode(200)
  async failStep(@Param('id') id: string, @Body() body: unknown) {
    const { token, error } = parseCompletionBody(id, body, 'error');
    await this.engine.failStep(token, parseStepError(error));
    return { workflowId: id, failed: true };
  }

  /** The key's event (ctx.setEvent), waiting up to `?timeout=` (0 to 60 s); `value` null when there is none. */
  @Get(':id/events/:key')
  async event(@Param('id') id: string, @Param('key') key: string, @Query('timeout') timeout: unknown) {
    const value = await this.engine.getEvent(id, key, { timeout: parseResultTimeout(timeout) });
    return { workflowId: id, key, value };
  }

  /**
   * The stream as server-sent events: one `entry` event per entry (its `id` the offset, so a client
   * that reconnects with `Last-Event-ID` resumes after it; or `?from=`), then an `end` event once the
   * stream is closed or the workflow ended. Behind the same guards as every Weft route.
   */
  @Sse(':id/streams/:key')
  async stream(
    @Param('id') id: string,
    @Param('key') key: string,
    @Query('from') from: unknown,
    @Headers('last-event-id') lastEventId: unknown,
  ): Promise<Observable<MessageEvent>> {
    const start = parseStreamStart(from, lastEventId);
    const entries = this.engine.readStream(id, key, { from: start });
    // A missing workflow is a 404 before the event stream starts, not an event in it.
    if (!(await this.engine.store.workflows.get(id))) throw new WorkflowNotFoundError(id);
    return sseOf(entries, start);
  }
}

/**
 * The iterator as events; unsubscribing (the client went away) stops it. Every event names the
 * offset a resuming client has read up to (Nest would number an event without an id itself): the
 * `end` event the last one sent, or an empty id (start over from 0) when that is before 0.
 */
function sseOf(entries: AsyncIterable<StreamEntry>, start: number): Observable<MessageEvent> {
  return new Observable<MessageEvent>((sub) => {
    const it = entries[Symbol.asyncIterator]();
    let stopped = false;
    let next = start;
    void (async () => {
      try {
        for (let r = await it.next(); !r.done && !stopped; r = await it.next()) {
          next = r.value.offset + 1;
          sub.next({ id: String(r.value.offset), type: 'entry', data: r.value });
        }
        if (!stopped) sub.next({ id: next > 0 ? String(next - 1) : '', type: 'end', data: {} });
        sub.complete();
      } catch (err) {
        sub.error(err);
      }
    })();
    return () => {
      stopped = true;
      void it.return?.(undefined);
    };
  });
}
