import { loadClsTransactional } from './ambient-cls-transactional.js';
import type { FactoryProvider, Type } from '@nestjs/common';
import type { WeftInterceptor } from '../common/interceptors.js';
import { ModuleRef } from '@nestjs/core';
import type { CodecOption, PayloadCodec } from '../common/codec.js';
import type { Registry } from 'prom-client';
import { WeftEngine } from '../engine/engine.js';
import type { WeftEngineOptions } from '../engine/options.js';
import { WeftMetrics } from '../observability/metrics.js';
import { WorkflowClaimRegistry } from '../ownership/claim-registry.js';
import { ClaimRenewalScheduler } from '../ownership/renewal-scheduler.js';
import { ModuleOptionMisplacedError } from './nest-errors.js';
import { nestWeftLogger } from './nest-logger.js';
import { withCodeFirst } from './weft-lifecycle.service.js';
import { WEFT_DATABASE, WEFT_MODULE_EXTRAS } from './weft.constants.js';
import { WEFT_MODULE_OPTIONS } from './weft.module-definition.js';
import { OperationRepository } from '../storage/repositories/operation.repository.js';
import { WorkflowRepository } from '../storage/repositories/workflow.repository.js';
import type { WeftCodecRef, WeftModuleExtras, WeftModuleOptions } from './weft-module.options.js';

function registryOf(m: WeftModuleOptions['metrics']): Registry | undefined {
  return typeof m === 'object' && m !== null ? m.registry : undefined;
}

export const weftMetricsProvider: FactoryProvider<WeftMetrics> = {
  provide: WeftMetrics,
  inject: [WEFT_MODULE_OPTIONS, WEFT_MODULE_EXTRAS],
  useFactory: (options: WeftModuleOptions, extras: WeftModuleExtras) =>
    new WeftMetrics({ registry: registryOf(options.metrics) ?? registryOf(extras.metrics) }),
};

const hasGuards = (v: unknown) => typeof v === 'object' && v !== null && 'guards' in v;
/** `metrics: { registry }` and nothing else: read when WeftMetrics is made (weftMetricsProvider), after the factory. */
const registryOnly = (v: unknown) => typeof v === 'object' && v !== null && Object.keys(v).every((k) => k === 'registry');

/**
 * forRootAsync's factory runs after the routes and their guards are fixed (weft.module-extras.ts):
 * `http` or `metrics` in its result would be dropped without a word, guards and all, leaving the
 * routes unguarded. So they fail start-up, before the engine opens anything. Allowed: the very
 * value given beside useFactory (forRoot's options reach here whole, extras included), and
 * `metrics: { registry }`, which is still read then.
 */
function assertNoMisplacedOptions(options: WeftModuleOptions, extras: WeftModuleExtras): void {
  const misplaced = (['http', 'metrics', 'dashboard'] as const).filter((key) => {
    const value = options[key];
    if (value === undefined || Object.is(value, extras[key])) return false;
    return !(key === 'metrics' && registryOnly(value));
  });
  if (misplaced.length === 0) return;
  throw withCodeFirst(
    new ModuleOptionMisplacedError(
      misplaced,
      misplaced.some((key) => hasGuards(options[key])),
    ),
  );
}

/** A codec or interceptor class: the app's provider of it when there is one, else an instance made with its dependencies injected. */
async function resolveRef<T extends object>(ref: T | Type<T>, modules: ModuleRef): Promise<T> {
  if (typeof ref !== 'function') return ref;
  try {
    return modules.get(ref, { strict: false });
  } catch {
    return modules.create(ref);
  }
}

async function resolveCodecOption(option: WeftModuleOptions['codec'], modules: ModuleRef): Promise<CodecOption | undefined> {
  if (option === undefined) return undefined;
  if (typeof option === 'object' && 'current' in option) {
    const accepts = await Promise.all((option.accepts ?? []).map((c) => resolveRef<PayloadCodec>(c, modules)));
    return { current: await resolveRef<PayloadCodec>(option.current, modules), accepts };
  }
  return resolveRef<PayloadCodec>(option as WeftCodecRef, modules);
}

/** The interceptors, in order, each resolved like a codec class; a value that is not an array is left for the engine to refuse. */
async function resolveInterceptors(option: WeftModuleOptions['interceptors'], modules: ModuleRef): Promise<WeftInterceptor[] | undefined> {
  if (!Array.isArray(option)) return option;
  return Promise.all(option.map((i) => resolveRef<WeftInterceptor>(i, modules)));
}

export const weftEngineProvider: FactoryProvider<Promise<WeftEngine>> = {
  provide: WeftEngine,
  inject: [WEFT_MODULE_OPTIONS, WEFT_MODULE_EXTRAS, WeftMetrics, ModuleRef],
  useFactory: async (options: WeftModuleOptions, extras: WeftModuleExtras, metrics: WeftMetrics, modules: ModuleRef) => {
    assertNoMisplacedOptions(options, extras);
    const logger = options.logger ?? nestWeftLogger();
    const { http: _http, metrics: _metrics, dashboard: _dashboard, codec: codecRef, interceptors: interceptorRefs, ...rest } = options;
    // @nestjs-cls/transactional, when installed: its TransactionHost joins transactional bodies.
    const cls = await loadClsTransactional();
    const codec = await resolveCodecOption(codecRef, modules);
    const interceptors = await resolveInterceptors(interceptorRefs, modules);
    const engineOptions: WeftEngineOptions = {
      ...rest,
      logger,
      metrics,
      ambientTransactions: cls ? [cls] : undefined,
      ...(codec ? { codec } : {}),
      ...(interceptors ? { interceptors } : {}),
    };
    // Bad options, an unreachable database, migrations: the same code-first error as app.init()'s.
    const engine = await WeftEngine.create(engineOptions).catch((err: unknown) => {
      throw withCodeFirst(err);
    });
    const t = engine.database.target;
    logger.log(`Engine ${engine.engineId} ready on ${t.kind} PostgreSQL at ${t.host}:${t.port}, schema "${engine.database.schema}"`);
    return engine;
  },
};

export const weftDatabaseProvider: FactoryProvider = {
  provide: WEFT_DATABASE,
  inject: [WeftEngine],
  useFactory: (engine: WeftEngine) => engine.database,
};

/** The engine's own repositories, for reading workflows and their histories. */
export const workflowRepositoryProvider: FactoryProvider = {
  provide: WorkflowRepository,
  inject: [WeftEngine],
  useFactory: (engine: WeftEngine) => engine.store.workflows,
};

export const operationRepositoryProvider: FactoryProvider = {
  provide: OperationRepository,
  inject: [WeftEngine],
  useFactory: (engine: WeftEngine) => engine.store.operations,
};

/** Null unless ownership is 'workflow-lease'. */
export const claimRegistryProvider: FactoryProvider = {
  provide: WorkflowClaimRegistry,
  inject: [WeftEngine],
  useFactory: (engine: WeftEngine) => engine.ownership.claims.registry ?? null,
};

/** Null under ownership 'none'. */
export const renewalSchedulerProvider: FactoryProvider = {
  provide: ClaimRenewalScheduler,
  inject: [WeftEngine],
  useFactory: (engine: WeftEngine) => engine.ownership.maintenance.scheduler ?? null,
};
