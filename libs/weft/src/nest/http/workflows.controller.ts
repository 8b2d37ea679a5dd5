import { Body, Get, HttpCode, Inject, Param, Post, Query, Res, UseFilters } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { ResultTimeoutError, WorkflowFailedError } from '../../common/errors.js';
import { WeftEngine } from '../../engine/engine.js';
import type { ListPage, WorkflowDescription } from '../../common/types.js';
import type { ClaimDescription } from '../../ownership/policy.js';
import { WEFT_MODULE_EXTRAS } from '../weft.constants.js';
import type { WeftModuleExtras } from '../weft-module.options.js';
import { exposeErrorStacks, withoutStacks } from './http-options.js';
import {
  objectBody,
  parseForkBody,
  parseListQuery,
  parseReason,
  parseResultTimeout,
  parseStartRequest,
  parseUpdateWithStartRequest,
} from './requests.js';
import { WeftExceptionFilter } from './weft-exception.filter.js';
import { WorkflowStatus } from '../../common/types.js';

export type WorkflowResultResponse =
  | { workflowId: string; done: true; status: 'completed'; output: unknown }
  | { workflowId: string; done: true; status: string; error: unknown }
  | { workflowId: string; done: false };

/** Start, describe, list, cancel, suspend, resume, fork, retry, result. Routed under `<prefix>/workflows` (see controllers.ts). */
@UseFilters(WeftExceptionFilter)
export class WeftWorkflowsController {
  /** Recorded errors keep their stacks only behind guards or with `http.exposeErrorStacks` (docs/operations.md). */
  private readonly stacks: boolean;

  constructor(
    private readonly engine: WeftEngine,
    private readonly adapterHost: HttpAdapterHost,
    @Inject(WEFT_MODULE_EXTRAS) extras: WeftModuleExtras,
  ) {
    this.stacks = exposeErrorStacks(extras.http);
  }

  /** A recorded value (description, output, error) as sent: recorded errors in it lose their stacks unless exposed. */
  private recorded<T>(value: T): T {
    return this.stacks ? value : (withoutStacks(value) as T);
  }

  @Post()
  @HttpCode(201)
  async start(@Body() body: unknown): Promise<{ workflowId: string }> {
    const req = parseStartRequest(body);
    const handle = await this.engine.start(req.type, req.input, req.options);
    return { workflowId: handle.workflowId };
  }

  /**
   * Starts the workflow (or finds it by the id policy) and sends it an update, in one call: the
   * update's result, as POST :id/update/:name answers it (docs/messages.md).
   */
  @Post('update-with-start')
  @HttpCode(200)
  async updateWithStart(@Body() body: unknown): Promise<{ workflowId: string; update: string; result: unknown }> {
    const req = parseUpdateWithStartRequest(body);
    const opts = req.timeout === undefined ? {} : { timeout: req.timeout };
    const result = await this.engine.updateWithStart(req.type, req.input, req.options, req.update, req.args ?? null, opts);
    return { workflowId: req.options.workflowId!, update: req.update, result };
  }

  @Get()
  list(@Query() query: unknown): Promise<ListPage> {
    return this.engine.list(parseListQuery(query));
  }

  @Get(':id')
  async describe(@Param('id') id: string): Promise<WorkflowDescription> {
    return this.recorded(await this.engine.describe(id));
  }

  /** Holder, epoch and expiry of the workflow's claim (docs/api.md). */
  @Get(':id/ownership')
  async ownership(@Param('id') id: string): Promise<ClaimDescription> {
    await this.engine.describe(id); // 404 for an unknown id
    return this.engine.ownership.describe(id);
  }

  @Post(':id/cancel')
  @HttpCode(200)
  async cancel(@Param('id') id: string, @Body() body: unknown) {
    await this.engine.cancel(id, parseReason(body));
    // A running workflow was asked (docs/cancellation.md): its status as it is now, usually still running.
    return { workflowId: id, status: (await this.engine.describe(id)).status };
  }

  @Post(':id/suspend')
  @HttpCode(200)
  async suspend(@Param('id') id: string, @Body() body: unknown) {
    await this.engine.suspend(id, parseReason(body));
    return { workflowId: id, status: WorkflowStatus.Suspended };
  }

  @Post(':id/resume')
  @HttpCode(200)
  async resume(@Param('id') id: string, @Body() body: unknown) {
    objectBody(body, []);
    await this.engine.resume(id);
    return { workflowId: id, status: WorkflowStatus.Running };
  }

  /** A new workflow with this one's history before `fromStep` (a seq or a step name); 409 WEFT_FORK_REFUSED with the replay report. */
  @Post(':id/fork')
  @HttpCode(201)
  async fork(@Param('id') id: string, @Body() body: unknown): Promise<{ workflowId: string; forkedFrom: string }> {
    const handle = await this.engine.fork(id, parseForkBody(body));
    return { workflowId: handle.workflowId, forkedFrom: id };
  }

  /** A failed workflow goes on from its failed step as its next run. */
  @Post(':id/retry')
  @HttpCode(200)
  async retry(@Param('id') id: string, @Body() body: unknown) {
    objectBody(body, []);
    await this.engine.retry(id);
    return { workflowId: id, status: WorkflowStatus.Running };
  }

  /** 200 with the outcome once the workflow ended; 202 `{ done: false }` if it is still going after `?timeout=` (max 60s). */
  @Get(':id/result')
  async result(
    @Param('id') id: string,
    @Query('timeout') timeout: unknown,
    @Res({ passthrough: true }) res: unknown,
  ): Promise<WorkflowResultResponse> {
    const ms = parseResultTimeout(timeout);
    try {
      const output = await this.engine.result(id, { timeout: ms });
      return { workflowId: id, done: true, status: WorkflowStatus.Completed, output: this.recorded(output) };
    } catch (err) {
      if (err instanceof WorkflowFailedError) return { workflowId: id, done: true, status: err.status, error: this.recorded(err.failure) };
      if (!(err instanceof ResultTimeoutError)) throw err;
      this.adapterHost.httpAdapter.status(res, 202);
      return { workflowId: id, done: false };
    }
  }
}
