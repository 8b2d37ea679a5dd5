// What WeftModule.forRoot/forRootAsync accept; the definition and the controllers read these types.
import type { CanActivate, Type } from '@nestjs/common';
import type { Registry } from 'prom-client';
import type { WeftEngineOptions } from '../engine/options.js';
import type { PayloadCodec } from '../common/codec.js';
import type { WeftInterceptor } from '../common/interceptors.js';

export interface WeftHttpOptions {
  /** Route prefix of the workflow API (default 'weft': `/weft/workflows`). */
  prefix?: string;
  /**
   * Nest guards put with `UseGuards` on every Weft route (and on `GET /metrics` unless
   * `metrics.guards` says otherwise); the app's global guards apply as well. Guard classes are
   * instantiated in the Weft module: they may inject Weft's providers, global providers and what
   * `forRootAsync({ imports })` brings in.
   */
  guards?: Array<Type<CanActivate> | CanActivate>;
  /**
   * Send recorded error stacks in responses (`GET /:id`, `/:id/result`, `/:id/timeline`). Default: true when
   * `guards` is non-empty, false otherwise (name, message and other fields only).
   */
  exposeErrorStacks?: boolean;
}

export interface WeftMetricsModuleOptions {
  /** Publish on this registry (default: a private one). */
  registry?: Registry;
  /** Serve `GET /metrics` (default true); turn off when the app already exposes this registry. */
  endpoint?: boolean;
  /** Guards of `GET /metrics` (default: `http.guards`); `[]` leaves it open for a scraper. */
  guards?: Array<Type<CanActivate> | CanActivate>;
}

export interface WeftDashboardOptions {
  /** Where the page is served (default 'weft': `GET /weft`, its assets under `/weft/dashboard/`). */
  path?: string;
}

/** A codec as WeftModule takes it: an instance, or a class Nest resolves (a provider of the app, else made with its dependencies injected). */
export type WeftCodecRef = PayloadCodec | Type<PayloadCodec>;

/** An interceptor as WeftModule takes it: an instance, or a class Nest resolves like a codec class. */
export type WeftInterceptorRef = WeftInterceptor | Type<WeftInterceptor>;

export interface WeftModuleOptions extends Omit<WeftEngineOptions, 'metrics' | 'codec' | 'interceptors'> {
  /**
   * Hooks around starts, runs, step attempts and signals (docs/interceptors.md), the first
   * outermost; each an instance or a class resolved with DI. `WeftClsInterceptor` carries
   * nestjs-cls context into workflows and steps.
   */
  interceptors?: WeftInterceptorRef[];
  /**
   * Encodes every payload at rest (docs/codecs.md): a codec, or `{ current, accepts }` for key
   * rotation; each an instance or a class resolved with DI (so a KMS-backed service can be injected).
   */
  codec?: WeftCodecRef | { current: WeftCodecRef; accepts?: WeftCodecRef[] };
  /** The HTTP workflow API (start, describe, list, cancel, ...); off by default. */
  http?: boolean | WeftHttpOptions;
  /** Prometheus metrics endpoint `GET /metrics`; off by default (WeftMetrics is always injectable). */
  metrics?: boolean | WeftMetricsModuleOptions;
  /**
   * The operator page (docs/operations.md#dashboard); off by default. It reads the HTTP API, so it
   * turns `http` on with its defaults when `http` is absent, behind the same `http.guards`.
   */
  dashboard?: boolean | WeftDashboardOptions;
}

/**
 * Read when the module is defined, before any factory runs: routes must be known then. With
 * forRootAsync, give `http`, `metrics` and `dashboard` beside `useFactory`.
 */
export interface WeftModuleExtras {
  isGlobal?: boolean;
  http?: WeftModuleOptions['http'];
  metrics?: WeftModuleOptions['metrics'];
  dashboard?: WeftModuleOptions['dashboard'];
}
