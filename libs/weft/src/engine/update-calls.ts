// engine.update and engine.updateWithStart: the caller's side of an update, checked and bounded
// before anything is written, then sent through Messaging (docs/api.md, DESIGN 9.3).
import { InvalidArgumentError, UnknownHandlerError } from '../common/errors.js';
import { type Duration, parseDuration } from '../common/duration.js';
import type { StartOptions } from '../common/types.js';
import type { Messaging } from './messaging.js';
import type { ResolvedEngineOptions } from './options.js';
import type { WorkflowRegistry } from './registry.js';
import type { Starter } from './starter.js';
import { toStoredJson, validateName } from './validation.js';

export interface UpdateCallDependencies {
  registry: WorkflowRegistry;
  options: ResolvedEngineOptions;
  starter: Starter;
  messaging: Messaging;
  /** Throws EngineDisposedError once the engine is disposed. */
  assertOpen(): void;
  /** Rejects when this engine may not run anything (not bootstrapped, disposed, deposed). */
  assertCanRun(): Promise<void>;
}

export class UpdateCalls {
  constructor(private readonly deps: UpdateCallDependencies) {}

  async update<R>(workflowId: string, name: string, args: unknown, opts: { timeout?: Duration }): Promise<R> {
    this.deps.assertOpen();
    return this.deps.messaging.update<R>(workflowId, name, args ?? null, opts);
  }

  /**
   * Starts the workflow (or finds it by `startOpts`' id policy) and sends it the update. The start
   * is written outside any caller transaction: this call waits for the handler, which a start not
   * yet committed would never run.
   */
  async updateWithStart<R>(
    type: string,
    input: unknown,
    startOpts: StartOptions,
    updateName: string,
    args: unknown,
    opts: { timeout?: Duration },
  ): Promise<R> {
    const { registry, options, starter, messaging } = this.deps;
    this.deps.assertOpen();
    const def = registry.get(validateName('workflow type', type));
    validateName('update name', updateName);
    if (startOpts?.manager !== undefined) {
      throw new InvalidArgumentError(
        'updateWithStart',
        "takes no manager: it waits for the update's result, which a start not yet committed never gives",
      );
    }
    if (!def.updateHandlers?.[updateName]) throw new UnknownHandlerError(def.name, 'update', updateName);
    const timeoutMs = parseDuration(opts.timeout ?? '30s', 'update timeout');
    const stored = toStoredJson(args ?? null, `Arguments of update "${updateName}"`, options.maxPayloadBytes);
    await this.deps.assertCanRun();
    const tracing = options.tracing.ready();
    if (tracing) await tracing;
    const workflowId = await starter.start({ type, input, opts: startOpts ?? {} });
    return messaging.sendUpdate<R>(workflowId, updateName, stored, timeoutMs);
  }
}
