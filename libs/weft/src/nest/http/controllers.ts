import { Controller, Type, UseGuards } from '@nestjs/common';
import { InvalidConfigurationError } from '../../common/errors.js';
import { DEFAULT_HTTP_PREFIX } from '../weft.constants.js';
import type { WeftModuleExtras } from '../weft-module.options.js';
import { WeftDashboardController } from '../dashboard/dashboard.controller.js';
import { assertDashboardPathFree, dashboardPath } from '../dashboard/dashboard-options.js';
import { httpGuards, httpObject, metricsGuards, type WeftGuards } from './http-options.js';
import { WeftEnginesController, WeftQueuesController, WeftTimelineController } from './inspect.controller.js';
import { WeftMessagesController } from './messages.controller.js';
import { WeftMetricsController } from './metrics.controller.js';
import { WeftSameOriginGuard } from './same-origin.guard.js';
import { WeftSchedulesController } from './schedules.controller.js';
import { WeftWorkflowsController } from './workflows.controller.js';
import { openApiController } from './openapi.js';

/** The route prefix for `http` (null when off); validated here because routes are fixed at definition time. */
export function httpPrefix(http: WeftModuleExtras['http']): string | null {
  if (http === undefined || http === false) return null;
  if (http === true) return DEFAULT_HTTP_PREFIX;
  const prefix = httpObject(http)?.prefix ?? DEFAULT_HTTP_PREFIX;
  if (typeof prefix !== 'string' || !/^[\w\-/.]*$/.test(prefix)) {
    throw new InvalidConfigurationError('http.prefix', 'must be a path like "weft" or "admin/weft"');
  }
  return prefix.replace(/^\/+|\/+$/g, '');
}

export function metricsEndpoint(metrics: WeftModuleExtras['metrics']): boolean {
  if (metrics === undefined || metrics === false) return false;
  if (metrics === true) return true;
  if (typeof metrics !== 'object' || metrics === null)
    throw new InvalidConfigurationError('metrics', 'must be a boolean or { registry?, endpoint?, guards? }');
  return metrics.endpoint !== false;
}

/** Stateless: one instance serves every controller of every app. */
const sameOrigin = new WeftSameOriginGuard();

/**
 * A subclass of `Base` routed at `path` with `guards`: one per module definition, so two apps may
 * use two prefixes and two sets of guards without decorating the shared base class. Every Weft
 * controller goes through here, so each also gets the cross-origin check, after the app's guards.
 */
function routed(Base: Type<object>, path: string, guards: WeftGuards): Type {
  const Routed = { [Base.name]: class extends Base {} }[Base.name];
  Controller(path)(Routed);
  UseGuards(...guards, sameOrigin)(Routed);
  return Routed;
}

/**
 * Every controller Weft registers; test/nest-http-guards.e2e-spec.ts checks each route refuses what
 * the guards refuse. `extras.http` is the one the module runs with (`httpWithDashboard`).
 */
export function weftControllers(extras: Pick<WeftModuleExtras, 'http' | 'metrics' | 'dashboard'>): Type[] {
  const out: Type[] = [];
  const prefix = httpPrefix(extras.http);
  const guardsOfMetrics = metricsGuards(extras); // validated even when the endpoint is off
  const under = (route: string) => (prefix ? `${prefix}/${route}` : route);
  if (prefix !== null) {
    const path = under('workflows');
    const guards = httpGuards(extras.http);
    out.push(routed(WeftWorkflowsController, path, guards), routed(WeftMessagesController, path, guards));
    out.push(
      routed(WeftTimelineController, path, guards),
      routed(WeftEnginesController, under('engines'), guards),
      routed(WeftQueuesController, under('queues'), guards),
    );
    out.push(routed(WeftSchedulesController, under('schedules'), guards));
    out.push(routed(openApiController(out), under('openapi.json'), guards)); // describes `out` as it is at the end
    const page = dashboardPath(extras.dashboard);
    if (page !== null) {
      assertDashboardPathFree(page, prefix);
      out.push(routed(WeftDashboardController, page, guards));
    }
  }
  if (metricsEndpoint(extras.metrics)) out.push(routed(WeftMetricsController, 'metrics', guardsOfMetrics));
  return out;
}
