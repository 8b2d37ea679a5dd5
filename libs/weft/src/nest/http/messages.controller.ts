import { Body, Get, HttpCode, Param, Post, UseFilters } from '@nestjs/common';
import type { Duration } from '../../engine/duration';
import { WeftEngine } from '../../engine/engine';
import { FeatureNotAvailableError } from '../nest-errors';
import { objectBody, parseUpdateBody } from './requests';
import { WeftExceptionFilter } from './weft-exception.filter';

type EngineMessaging = {
  signal?: (id: string, name: string, payload: unknown) => Promise<unknown>;
  update?: (id: string, name: string, args: unknown, opts?: { timeout?: Duration }) => Promise<unknown>;
  query?: (id: string, name: string, args?: unknown) => Promise<unknown>;
};

/** Signal, update and query routes: 501 until the engine offers those methods. */
@UseFilters(WeftExceptionFilter)
export class WeftMessagesController {
  constructor(private readonly engine: WeftEngine) {}

  private method<K extends keyof EngineMessaging>(name: K): NonNullable<EngineMessaging[K]> {
    const fn = (this.engine as unknown as EngineMessaging)[name];
    if (typeof fn !== 'function') throw new FeatureNotAvailableError(`engine.${name}()`);
    return fn.bind(this.engine) as NonNullable<EngineMessaging[K]>;
  }

  @Post(':id/signal/:name')
  @HttpCode(202)
  async signal(@Param('id') id: string, @Param('name') name: string, @Body() body: unknown) {
    const signal = this.method('signal');
    const { payload } = objectBody(body, ['payload']);
    await signal(id, name, payload ?? null);
    return { workflowId: id, signal: name, accepted: true };
  }

  @Post(':id/update/:name')
  @HttpCode(200)
  async update(@Param('id') id: string, @Param('name') name: string, @Body() body: unknown) {
    const update = this.method('update');
    const { args, timeout } = parseUpdateBody(body);
    const result = await update(id, name, args ?? null, timeout === undefined ? {} : { timeout });
    return { workflowId: id, update: name, result };
  }

  @Post(':id/query/:name')
  @HttpCode(200)
  async query(@Param('id') id: string, @Param('name') name: string, @Body() body: unknown) {
    const query = this.method('query');
    const { args } = objectBody(body, ['args']);
    return { workflowId: id, query: name, result: await query(id, name, args) };
  }

  @Get(':id/query/:name')
  async queryNoArgs(@Param('id') id: string, @Param('name') name: string) {
    const query = this.method('query');
    return { workflowId: id, query: name, result: await query(id, name) };
  }
}
