import { Body, Get, HttpCode, Param, Post, UseFilters } from '@nestjs/common';
import { WeftEngine } from '../../engine/engine.js';
import { objectBody, parseUpdateBody } from './requests.js';
import { WeftExceptionFilter } from './weft-exception.filter.js';

/** Signal, update and query routes. */
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
}
