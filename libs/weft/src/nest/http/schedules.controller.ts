import { Body, Delete, Get, HttpCode, Param, Patch, Post, Query, UseFilters } from '@nestjs/common';
import { InvalidArgumentError } from '../../common/errors.js';
import type { ScheduleCreateOptions, ScheduleDescription } from '../../common/types.js';
import { WeftEngine } from '../../engine/engine.js';
import type { SchedulePatch } from '../../engine/schedules/schedules.js';
import { SCHEDULE_CREATE_KEYS, SCHEDULE_PATCH_KEYS } from '../../engine/schedules/spec.js';
import { objectBody } from './requests.js';
import { WeftExceptionFilter } from './weft-exception.filter.js';

/** engine.schedules over HTTP (docs/schedules.md). Routed under `<prefix>/schedules` (see controllers.ts). */
@UseFilters(WeftExceptionFilter)
export class WeftSchedulesController {
  constructor(private readonly engine: WeftEngine) {}

  @Get()
  list(@Query() query: unknown): Promise<ScheduleDescription[]> {
    const q = objectBody(query, ['after', 'limit'], 'query');
    const limit = q.limit === undefined ? undefined : Number(q.limit);
    if (q.limit !== undefined && !/^\d{1,4}$/.test(String(q.limit)))
      throw new InvalidArgumentError('limit', 'must be an integer from 1 to 1000');
    return this.engine.schedules.list({ after: q.after as string | undefined, limit });
  }

  @Post()
  @HttpCode(201)
  create(@Body() body: unknown): Promise<ScheduleDescription> {
    // Every field is validated by engine.schedules (types, bounds), before anything is written.
    return this.engine.schedules.create(objectBody(body, SCHEDULE_CREATE_KEYS) as unknown as ScheduleCreateOptions);
  }

  @Get(':id')
  describe(@Param('id') id: string): Promise<ScheduleDescription> {
    return this.engine.schedules.describe(id);
  }

  @Patch(':id')
  update(@Param('id') id: string, @Body() body: unknown): Promise<ScheduleDescription> {
    return this.engine.schedules.update(id, objectBody(body, SCHEDULE_PATCH_KEYS) as SchedulePatch);
  }

  @Post(':id/pause')
  @HttpCode(200)
  pause(@Param('id') id: string, @Body() body: unknown): Promise<ScheduleDescription> {
    objectBody(body, []); // takes no fields: a body with some is a mistake, refused before acting
    return this.engine.schedules.pause(id);
  }

  @Post(':id/unpause')
  @HttpCode(200)
  unpause(@Param('id') id: string, @Body() body: unknown): Promise<ScheduleDescription> {
    objectBody(body, []); // takes no fields: a body with some is a mistake, refused before acting
    return this.engine.schedules.unpause(id);
  }

  /** One extra run now; 202 with its workflow id. */
  @Post(':id/trigger')
  @HttpCode(202)
  trigger(@Param('id') id: string, @Body() body: unknown): Promise<{ workflowId: string }> {
    objectBody(body, []); // takes no fields: a body with some is a mistake, refused before acting
    return this.engine.schedules.trigger(id);
  }

  @Delete(':id')
  @HttpCode(204)
  async remove(@Param('id') id: string, @Body() body: unknown): Promise<void> {
    objectBody(body, []);
    await this.engine.schedules.delete(id);
  }
}
