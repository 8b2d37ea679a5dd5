import { Controller, Type } from '@nestjs/common';
import { InvalidConfigurationError } from '../../common/errors.js';
import { DEFAULT_HTTP_PREFIX } from '../weft.constants.js';
import type { WeftModuleExtras } from '../weft-module.options.js';
import { WeftMessagesController } from './messages.controller.js';
import { WeftMetricsController } from './metrics.controller.js';
import { WeftWorkflowsController } from './workflows.controller.js';

/** The route prefix for `http` (null when off); validated here because routes are fixed at definition time. */
export function httpPrefix(http: WeftModuleExtras['http']): string | null {
  if (http === undefined || http === false) return null;
  if (http === true) return DEFAULT_HTTP_PREFIX;
  if (typeof http !== 'object' || http === null) throw new InvalidConfigurationError('http', 'must be a boolean or { prefix?: string }');
  const prefix = http.prefix ?? DEFAULT_HTTP_PREFIX;
  if (typeof prefix !== 'string' || !/^[\w\-/.]*$/.test(prefix)) {
    throw new InvalidConfigurationError('http.prefix', 'must be a path like "weft" or "admin/weft"');
  }
  return prefix.replace(/^\/+|\/+$/g, '');
}

export function metricsEndpoint(metrics: WeftModuleExtras['metrics']): boolean {
  if (metrics === undefined || metrics === false) return false;
  if (metrics === true) return true;
  if (typeof metrics !== 'object' || metrics === null)
    throw new InvalidConfigurationError('metrics', 'must be a boolean or { registry?, endpoint? }');
  return metrics.endpoint !== false;
}

/** A subclass of `Base` routed at `path`: one per module definition, so two apps may use two prefixes. */
function routed(Base: Type<object>, path: string): Type {
  const Routed = { [Base.name]: class extends Base {} }[Base.name];
  Controller(path)(Routed);
  return Routed;
}

export function weftControllers(extras: Pick<WeftModuleExtras, 'http' | 'metrics'>): Type[] {
  const out: Type[] = [];
  const prefix = httpPrefix(extras.http);
  if (prefix !== null) {
    const path = prefix ? `${prefix}/workflows` : 'workflows';
    out.push(routed(WeftWorkflowsController, path), routed(WeftMessagesController, path));
  }
  if (metricsEndpoint(extras.metrics)) out.push(WeftMetricsController);
  return out;
}
