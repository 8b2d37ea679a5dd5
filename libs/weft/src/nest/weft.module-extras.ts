import type { DynamicModule } from '@nestjs/common';
import { dashboardPath, httpWithDashboard, WEFT_DASHBOARD_ROUTES } from './dashboard/dashboard-options.js';
import { httpPrefix, weftControllers } from './http/controllers.js';
import { WeftHttpLayers } from './http/weft-http-layers.js';
import { weftControllerRoutes } from './http/weft-routes.js';
import { WEFT_HTTP_ROUTES, WEFT_MODULE_EXTRAS } from './weft.constants.js';
import type { WeftModuleExtras } from './weft-module.options.js';

/** Adds what forRoot/forRootAsync decide statically: global flag, controllers, the extras themselves. */
export function withWeftExtras(definition: DynamicModule, extras: WeftModuleExtras): DynamicModule {
  const { isGlobal, metrics, dashboard } = extras;
  const http = httpWithDashboard(extras); // the dashboard reads the HTTP API: on with it
  const routes = { path: dashboardPath(dashboard) ?? '', apiPrefix: httpPrefix(http) ?? '' };
  const controllers = weftControllers({ http, metrics, dashboard });
  // Weft's own body reading and typed refusals on its paths, when it serves any (weft-http-layers.ts).
  const layers =
    controllers.length === 0 ? [] : [{ provide: WEFT_HTTP_ROUTES, useValue: weftControllerRoutes(controllers) }, WeftHttpLayers];
  return {
    ...definition,
    global: isGlobal,
    providers: [
      ...(definition.providers ?? []),
      { provide: WEFT_MODULE_EXTRAS, useValue: { http, metrics, dashboard } },
      { provide: WEFT_DASHBOARD_ROUTES, useValue: routes },
      ...layers,
    ],
    controllers: [...(definition.controllers ?? []), ...controllers],
  };
}
