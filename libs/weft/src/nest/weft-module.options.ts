// What WeftModule.forRoot/forRootAsync accept; the definition and the controllers read these types.
import type { Registry } from 'prom-client';
import type { WeftEngineOptions } from '../engine/options.js';

export interface WeftHttpOptions {
  /** Route prefix of the workflow API (default 'weft': `/weft/workflows`). */
  prefix?: string;
}

export interface WeftMetricsModuleOptions {
  /** Publish on this registry (default: a private one). */
  registry?: Registry;
  /** Serve `GET /metrics` (default true); turn off when the app already exposes this registry. */
  endpoint?: boolean;
}

export interface WeftModuleOptions extends Omit<WeftEngineOptions, 'metrics'> {
  /** The HTTP workflow API (start, describe, list, cancel, ...); off by default. */
  http?: boolean | WeftHttpOptions;
  /** Prometheus metrics endpoint `GET /metrics`; off by default (WeftMetrics is always injectable). */
  metrics?: boolean | WeftMetricsModuleOptions;
}

/**
 * Read when the module is defined, before any factory runs: routes must be known then. With
 * forRootAsync, give `http` and `metrics` beside `useFactory`.
 */
export interface WeftModuleExtras {
  isGlobal?: boolean;
  http?: WeftModuleOptions['http'];
  metrics?: WeftModuleOptions['metrics'];
}
