import { Body, Get, HttpCode, Param, Post, Query, UseFilters } from '@nestjs/common';
import { WeftEngine } from '../../engine/engine.js';
import { objectBody, parseResultTimeout, parseUpdateBody } from './requests.js';
import { WeftExceptionFilter } from './weft-exception.filter.js';

/** Signal, update, query and event routes. */
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

  /** The key's event (ctx.setEvent), waiting up to `?timeout=` (0 to 60 s); `value` null when there is none. */
  @Get(':id/events/:key')
  async event(@Param('id') id: string, @Param('key') key: string, @Query('timeout') timeout: unknown) {
    const value = await this.engine.getEvent(id, key, { timeout: parseResultTimeout(timeout) });
    return { workflowId: id, key, value };
  }
}
