import { Get, Inject, Param, Req, Res, UseFilters } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { DashboardAssetNotFoundError } from '../nest-errors.js';
import { WeftExceptionFilter } from '../http/weft-exception.filter.js';
import { DASHBOARD_ASSETS, DASHBOARD_CSP, dashboardPage, dashboardUrls } from './assets.js';
import { type DashboardRoutes, WEFT_DASHBOARD_ROUTES } from './dashboard-options.js';

/**
 * The operator page and its files. Routed at the dashboard path with `http.guards` (see
 * controllers.ts), like every Weft route. Written through the HTTP adapter: Express or Fastify.
 */
@UseFilters(WeftExceptionFilter)
export class WeftDashboardController {
  constructor(
    private readonly adapterHost: HttpAdapterHost,
    @Inject(WEFT_DASHBOARD_ROUTES) private readonly routes: DashboardRoutes,
  ) {}

  private headers(res: unknown, contentType: string, cache: string): void {
    const adapter = this.adapterHost.httpAdapter;
    adapter.setHeader(res, 'Content-Type', contentType);
    adapter.setHeader(res, 'Cache-Control', cache);
    adapter.setHeader(res, 'X-Content-Type-Options', 'nosniff');
  }

  @Get()
  page(@Req() req: unknown, @Res({ passthrough: true }) res: unknown): string {
    const url = String(this.adapterHost.httpAdapter.getRequestUrl(req) ?? '');
    const path = url.split(/[?#]/)[0];
    this.headers(res, 'text/html; charset=utf-8', 'no-store');
    const adapter = this.adapterHost.httpAdapter;
    adapter.setHeader(res, 'Content-Security-Policy', DASHBOARD_CSP);
    // A secret in the address (an app's sign-in link) must not leak to other sites.
    adapter.setHeader(res, 'Referrer-Policy', 'no-referrer');
    return dashboardPage(dashboardUrls(path, this.routes.path, this.routes.apiPrefix));
  }

  @Get('dashboard/:file')
  asset(@Param('file') file: string, @Req() req: unknown, @Res({ passthrough: true }) res: unknown): string {
    const found = DASHBOARD_ASSETS.get(file);
    if (!found) throw new DashboardAssetNotFoundError(String(file));
    // Behind the guards, per user: the browser revalidates each load and gets a 304 when unchanged.
    this.headers(res, found.contentType, 'private, no-cache');
    this.adapterHost.httpAdapter.setHeader(res, 'ETag', found.etag);
    const given = (req as { headers?: Record<string, unknown> }).headers?.['if-none-match'];
    if (given === found.etag) {
      this.adapterHost.httpAdapter.status(res, 304);
      return '';
    }
    return found.body;
  }
}
