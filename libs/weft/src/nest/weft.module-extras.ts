import type { DynamicModule } from '@nestjs/common';
import { dashboardPath, httpWithDashboard, WEFT_DASHBOARD_ROUTES } from './dashboard/dashboard-options.js';
import { httpPrefix, weftControllers } from './http/controllers.js';
import { WEFT_MODULE_EXTRAS } from './weft.constants.js';
import type { WeftModuleExtras } from './weft-module.options.js';

/** Adds what forRoot/forRootAsync decide statically: global flag, controllers, the extras themselves. */
export function withWeftExtras(definition: DynamicModule, extras: WeftModuleExtras): DynamicModule {
  const { isGlobal, metrics, dashboard } = extras;
  const http = httpWithDashboard(extras); // the dashboard reads the HTTP API: on with it
  const routes = { path: dashboardPath(dashboard) ?? '', apiPrefix: httpPrefix(http) ?? '' };
  return {
    ...definition,
    global: isGlobal,
    providers: [
      ...(definition.providers ?? []),
      { provide: WEFT_MODULE_EXTRAS, useValue: { http, metrics, dashboard } },
      { provide: WEFT_DASHBOARD_ROUTES, useValue: routes },
    ],
    controllers: [...(definition.controllers ?? []), ...weftControllers({ http, metrics, dashboard })],
  };
}
