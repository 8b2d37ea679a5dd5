import { Injectable, Logger, OnModuleInit, Scope, Type } from '@nestjs/common';
import { DiscoveryService, MetadataScanner, ModuleRef } from '@nestjs/core';
import type { InstanceWrapper } from '@nestjs/core/injector/instance-wrapper.js';
import { WeftEngine } from '../engine/engine.js';
import { InvalidConfigurationError, WeftError } from '../common/errors.js';
import type { ScheduleDecoratorOptions, UpdateValidatorFn, WorkflowDefinition } from '../common/types.js';
import { resolveSchedule, SCHEDULE_DECORATOR_KEYS } from '../engine/schedules/spec.js';
import { MAX_NAME_LENGTH } from '../engine/validation.js';
import type { WorkflowMetadata } from './decorators/workflow.decorator.js';
import { asStep, stepMetadataOf, type StepMetadata } from './decorators/step-call.js';
import {
  DuplicateHandlerNameError,
  DuplicateWorkflowNameError,
  InvalidWorkflowDeclarationError,
  ScopedWorkflowError,
  WorkflowRunMissingError,
} from './nest-errors.js';
import { WeftMetadataAccessor } from './weft-metadata.accessor.js';
import { HandlerKind, WEFT_STEP_METADATA } from './weft.constants.js';
import { DataSource } from 'typeorm';
import { createWorkflowFactory } from './workflow-factory.js';

interface FoundWorkflow {
  wrapper: InstanceWrapper;
  metatype: Type;
  meta: WorkflowMetadata;
}

/** Step methods already wrapped for a double (a second init wraps nothing twice). */
const DOUBLED = new WeakSet<object>();

const KINDS: HandlerKind[] = ['signal', 'update', 'query'];
const MAX_NAME = MAX_NAME_LENGTH;

/** Finds `@Workflow` providers and registers them on the engine, all or none. */
@Injectable()
export class WeftExplorer implements OnModuleInit {
  private readonly logger = new Logger('Weft');

  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
    private readonly accessor: WeftMetadataAccessor,
    private readonly engine: WeftEngine,
    private readonly moduleRef: ModuleRef,
  ) {}

  async onModuleInit(): Promise<void> {
    try {
      this.checkTransactionalDatabase();
      this.keepStepDoubles();
      await this.registerWorkflows();
    } catch (err) {
      // The app will not start: close the database now rather than leave it to a close() that may never come.
      await this.engine.dispose().catch(() => undefined);
      throw err;
    }
  }

  /**
   * A provider with @Step methods replaced in a test (`overrideProvider(S).useValue(obj)`,
   * `useClass`, `useFactory`) keeps step semantics: the replacement's methods of those names are
   * wrapped as the same recorded steps (docs/testing.md#step-doubles). The instance is changed
   * in place: other providers already hold it.
   */
  private keepStepDoubles(): void {
    for (const wrapper of this.discovery.getProviders()) {
      const token = wrapper.token as unknown;
      const instance = wrapper.instance as Record<string, unknown> | null | undefined;
      if (typeof token !== 'function' || !instance || typeof instance !== 'object' || instance instanceof token) continue;
      const Class = token as Type;
      for (const method of this.scanner.getAllMethodNames(Class.prototype)) {
        const meta = stepMetadataOf(Class, method);
        const fn = instance[method];
        if (!meta || typeof fn !== 'function' || DOUBLED.has(fn)) continue;
        const wrapped = asStep(meta.name, meta.options, fn as (...args: unknown[]) => unknown, meta.transaction);
        DOUBLED.add(wrapped);
        instance[method] = wrapped;
      }
    }
  }

  private async registerWorkflows(): Promise<void> {
    const found = this.discover();
    this.checkNames(found);
    const definitions: WorkflowDefinition[] = [];
    for (const wf of found) definitions.push(await this.define(wf));
    definitions.forEach((def, i) => {
      this.engine.register(def);
      const { metatype, meta } = found[i];
      const about = meta.options?.description ? ` - ${meta.options.description}` : '';
      this.logger.log(`Registered workflow "${def.name}" (${metatype.name}${describeHandlers(def)})${about}`);
    });
  }

  /**
   * A transactional step's body writes the app's entities through Weft's connection, so Weft must
   * run on the app's own DataSource: with an app DataSource beside a `database: { url }` or the
   * embedded server, start-up fails, naming the option (docs/transactions.md).
   */
  private checkTransactionalDatabase(): void {
    const database = this.engine.database;
    if (database.target.kind === 'datasource') return;
    let appDataSource: DataSource | undefined;
    try {
      appDataSource = this.moduleRef.get(DataSource, { strict: false });
    } catch {
      return; // the app has no TypeORM DataSource: its bodies use the manager's raw queries
    }
    if (!appDataSource || appDataSource === database.dataSource) return;
    const step = this.transactionalSteps()[0];
    if (!step) return;
    throw new InvalidConfigurationError(
      'database',
      `@Step({ transaction: true }) on ${step} writes through Weft's connection, but Weft runs on its own ${database.target.kind === 'url' ? 'database: { url }' : 'embedded database'} beside the app's DataSource. Give WeftModule the app's DataSource (database: dataSource).`,
    );
  }

  /** `Class.method` of every @Step({ transaction: true }) method of a provider. */
  private transactionalSteps(): string[] {
    const found: string[] = [];
    for (const wrapper of this.discovery.getProviders()) {
      const proto = (wrapper.metatype as Type | null)?.prototype as Record<string, unknown> | undefined;
      if (!proto || wrapper.inject) continue;
      for (const name of this.scanner.getAllMethodNames(proto)) {
        const meta = Reflect.getMetadata(WEFT_STEP_METADATA, proto[name] as object) as StepMetadata | undefined;
        if (meta?.transaction) found.push(`${(wrapper.metatype as Type).name}.${name}`);
      }
    }
    return found;
  }

  private discover(): FoundWorkflow[] {
    const seen = new Set<Type>();
    const found: FoundWorkflow[] = [];
    for (const wrapper of this.discovery.getProviders()) {
      const metatype = wrapper.metatype as Type | null;
      // Factory providers carry `inject`; their metatype is the factory, not a class.
      if (!metatype || typeof metatype !== 'function' || wrapper.inject || seen.has(metatype)) continue;
      const meta = this.accessor.getWorkflowMetadata(metatype);
      if (!meta) continue;
      seen.add(metatype);
      found.push({ wrapper, metatype, meta });
    }
    return found;
  }

  private checkNames(found: FoundWorkflow[]): void {
    const byName = new Map<string, string>();
    for (const { metatype, meta } of found) {
      if (typeof meta.name !== 'string' || meta.name.length === 0 || meta.name.length > MAX_NAME) {
        throw new InvalidWorkflowDeclarationError(metatype.name, `@Workflow name must be 1 to ${MAX_NAME} characters`);
      }
      const other = byName.get(meta.name) ?? (this.engine.registry.has(meta.name) ? '(registered on the engine directly)' : undefined);
      if (other) throw new DuplicateWorkflowNameError(meta.name, [other, metatype.name]);
      byName.set(meta.name, metatype.name);
    }
  }

  private async define({ wrapper, metatype, meta }: FoundWorkflow): Promise<WorkflowDefinition> {
    if (wrapper.scope === Scope.REQUEST || wrapper.durable || !wrapper.isDependencyTreeStatic())
      throw new ScopedWorkflowError(metatype.name);
    if (typeof (metatype.prototype as { run?: unknown }).run !== 'function') throw new WorkflowRunMissingError(metatype.name);
    const handlers = this.handlers(metatype);
    const validators = this.validators(metatype, handlers.update);
    const schedules = this.accessor.getSchedules(metatype);
    // Checked here, before any workflow is registered (all or none), naming the class.
    for (const s of schedules) checkSchedule(metatype.name, meta.name, s);
    return {
      name: meta.name,
      factory: await createWorkflowFactory(wrapper, this.moduleRef),
      signalHandlers: handlers.signal,
      updateHandlers: handlers.update,
      ...(Object.keys(validators).length ? { updateValidators: validators } : {}),
      queryHandlers: handlers.query,
      schedules,
      ...(meta.options.version !== undefined ? { version: meta.options.version } : {}),
      ...(meta.options.queue !== undefined ? { queue: meta.options.queue } : {}),
      ...(meta.options.partitionKey !== undefined ? { partitionKey: meta.options.partitionKey } : {}),
    };
  }

  /**
   * Update name → validator: an `@UpdateValidator(name)` method's name, or a handler's `validate`
   * option. One per update, and only for an update the class handles.
   */
  private validators(metatype: Type, updates: Record<string, string>): Record<string, string | UpdateValidatorFn> {
    const out: Record<string, string | UpdateValidatorFn> = {};
    const proto = metatype.prototype as Record<string, unknown>;
    const add = (name: unknown, v: string | UpdateValidatorFn, where: string) => {
      if (typeof name !== 'string' || updates[name] === undefined) {
        throw new InvalidWorkflowDeclarationError(
          metatype.name,
          `${where} validates update "${String(name)}", which has no @UpdateHandler`,
        );
      }
      if (out[name] !== undefined)
        throw new InvalidWorkflowDeclarationError(metatype.name, `update "${name}" has two validators (${where} and another)`);
      out[name] = v;
    };
    for (const method of this.scanner.getAllMethodNames(proto)) {
      const validated = this.accessor.getValidatorOf(proto[method]);
      if (validated !== undefined) add(validated, method, `@UpdateValidator on ${method}()`);
      const option = this.accessor.getValidateOption(proto[method]);
      if (option === undefined) continue;
      if (typeof option !== 'function')
        throw new InvalidWorkflowDeclarationError(metatype.name, `the validate option on ${method}() must be a function`);
      add(this.accessor.getHandlerName('update', proto[method]), option as UpdateValidatorFn, `the validate option on ${method}()`);
    }
    return out;
  }

  /** Handler name → method name, per kind; a name twice in one kind is a start-up error. */
  private handlers(metatype: Type): Record<HandlerKind, Record<string, string>> {
    const out: Record<HandlerKind, Record<string, string>> = { signal: {}, update: {}, query: {} };
    const proto = metatype.prototype as Record<string, unknown>;
    for (const method of this.scanner.getAllMethodNames(proto)) {
      for (const kind of KINDS) {
        const name = this.accessor.getHandlerName(kind, proto[method]);
        if (name === undefined) continue;
        if (typeof name !== 'string' || name.length === 0 || name.length > MAX_NAME) {
          throw new InvalidWorkflowDeclarationError(
            metatype.name,
            `${kind} handler name on ${method}() must be 1 to ${MAX_NAME} characters`,
          );
        }
        const existing = out[kind][name];
        if (existing !== undefined) throw new DuplicateHandlerNameError(metatype.name, kind, name, [existing, method]);
        out[kind][name] = method;
      }
    }
    return out;
  }
}

/** A bad `@Schedule`: the engine's own error (its class and code), its message prefixed with where it is. */
function checkSchedule(className: string, workflowType: string, s: ScheduleDecoratorOptions): void {
  try {
    resolveSchedule({ ...s, workflowType }, [...SCHEDULE_DECORATOR_KEYS, 'workflowType']);
  } catch (err) {
    if (err instanceof WeftError) {
      const id = typeof s?.id === 'string' ? `{ id: ${JSON.stringify(s.id.slice(0, 100))}, ... }` : '';
      err.message = `${className} @Schedule(${id}): ${err.message.replace(/\.$/, '')}. Fix the decorator's options (docs/schedules.md).`;
    }
    throw err;
  }
}

function describeHandlers(def: WorkflowDefinition): string {
  const parts = [
    ['signals', def.signalHandlers],
    ['updates', def.updateHandlers],
    ['queries', def.queryHandlers],
  ] as const;
  const listed = parts.filter(([, h]) => h && Object.keys(h).length > 0).map(([label, h]) => `${label}: ${Object.keys(h!).join(', ')}`);
  return listed.length ? `; ${listed.join('; ')}` : '';
}
