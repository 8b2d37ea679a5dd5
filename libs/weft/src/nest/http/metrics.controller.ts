import { Controller, Get, Res, UseFilters } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { WeftMetrics } from '../../observability/metrics.js';
import { WeftExceptionFilter } from './weft-exception.filter.js';

/** `GET /metrics` in the Prometheus text format, from WeftMetrics's registry. Its guards' refusals are typed like every Weft route's. */
@Controller('metrics')
@UseFilters(WeftExceptionFilter)
export class WeftMetricsController {
  constructor(
    private readonly metrics: WeftMetrics,
    private readonly adapterHost: HttpAdapterHost,
  ) {}

  @Get()
  async scrape(@Res({ passthrough: true }) res: unknown): Promise<string> {
    const text = await this.metrics.metrics();
    this.adapterHost.httpAdapter.setHeader(res, 'Content-Type', this.metrics.contentType);
    return text;
  }
}
