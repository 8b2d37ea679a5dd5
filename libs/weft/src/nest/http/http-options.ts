// The access-control parts of the `http` and `metrics` options: which guards go on which
// controller, and whether responses carry error stacks. Read when the module is defined.
import type { CanActivate, Type } from '@nestjs/common';
import { InvalidConfigurationError } from '../../common/errors.js';
import type { WeftHttpOptions, WeftModuleExtras } from '../weft-module.options.js';

export type WeftGuards = Array<Type<CanActivate> | CanActivate>;

const HTTP_KEYS = new Set(['prefix', 'guards', 'exposeErrorStacks']);
const METRICS_KEYS = new Set(['registry', 'endpoint', 'guards']);

/** A typo such as `gaurds` would leave the routes open: unknown keys are refused. */
function rejectUnknownKeys(option: string, value: object, known: Set<string>): void {
  const unknown = Object.keys(value).filter((k) => !known.has(k));
  if (unknown.length > 0) {
    throw new InvalidConfigurationError(
      option,
      `unknown key(s) ${unknown.map((k) => `"${k}"`).join(', ')}; known: ${[...known].join(', ')}`,
    );
  }
}

function isGuard(g: unknown): boolean {
  if (typeof g === 'function') return typeof (g as { prototype?: { canActivate?: unknown } }).prototype?.canActivate === 'function';
  return typeof g === 'object' && g !== null && typeof (g as { canActivate?: unknown }).canActivate === 'function';
}

function validGuards(option: string, guards: unknown): WeftGuards {
  if (guards === undefined) return [];
  if (!Array.isArray(guards) || !guards.every(isGuard)) {
    throw new InvalidConfigurationError(option, 'must be an array of guard classes or instances (each with a canActivate method)');
  }
  return guards as WeftGuards;
}

/** The `http` object checked (null when `http` is a boolean or absent). */
export function httpObject(http: WeftModuleExtras['http']): WeftHttpOptions | null {
  if (http === undefined || typeof http === 'boolean') return null;
  if (typeof http !== 'object' || http === null || Array.isArray(http)) {
    throw new InvalidConfigurationError('http', 'must be a boolean or { prefix?, guards?, exposeErrorStacks? }');
  }
  rejectUnknownKeys('http', http, HTTP_KEYS);
  validGuards('http.guards', http.guards);
  if (http.exposeErrorStacks !== undefined && typeof http.exposeErrorStacks !== 'boolean') {
    throw new InvalidConfigurationError('http.exposeErrorStacks', 'must be a boolean');
  }
  return http;
}

export function httpGuards(http: WeftModuleExtras['http']): WeftGuards {
  return httpObject(http)?.guards ?? [];
}

/** `metrics.guards` when given (even `[]`), else the `http` guards: /metrics is a Weft route too. */
export function metricsGuards(extras: Pick<WeftModuleExtras, 'http' | 'metrics'>): WeftGuards {
  const { metrics } = extras;
  if (typeof metrics === 'object' && metrics !== null) {
    rejectUnknownKeys('metrics', metrics, METRICS_KEYS);
    if (metrics.guards !== undefined) return validGuards('metrics.guards', metrics.guards);
  }
  return httpGuards(extras.http);
}

/** Stacks name files and code paths: only sent when asked for, or when a guard decides who reads them. */
export function exposeErrorStacks(http: WeftModuleExtras['http']): boolean {
  const options = httpObject(http);
  return options?.exposeErrorStacks ?? (options?.guards ?? []).length > 0;
}

/** Deeper than any stored value: payloads are at most MAX_JSON_DEPTH (100) levels; records add a few. */
const MAX_WALK_DEPTH = 256;

/** A recorded error, whatever else it holds (code, cause, details...): a string `stack` beside a `name` or `message`. */
function isRecordedError(v: Record<string, unknown>): boolean {
  return typeof v.stack === 'string' && (typeof v.name === 'string' || typeof v.message === 'string');
}

/**
 * `value` without the `stack` of any recorded error in it, at any depth: a workflow's error and
 * its causes, a failed operation's, a child's failure inside a parent's history entry or message.
 * Values with a toJSON (a Date) are kept as they are; other fields stay.
 */
export function withoutStacks(value: unknown, depth = 0): unknown {
  if (typeof value !== 'object' || value === null) return value;
  if (depth > MAX_WALK_DEPTH) return null; // deeper than anything stored: dropped rather than sent unchecked
  if (Array.isArray(value)) return value.map((e) => withoutStacks(e, depth + 1));
  if (typeof (value as { toJSON?: unknown }).toJSON === 'function') return value;
  const record = value as Record<string, unknown>;
  const error = isRecordedError(record);
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(record)) {
    if (!(error && key === 'stack')) out[key] = withoutStacks(v, depth + 1);
  }
  return out;
}
