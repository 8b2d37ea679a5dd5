// engine.start and engine.signalWithStart: the caller's side of a start, checked and bounded before
// anything is written, in the caller's transaction when there is one (docs/transactions.md).
import type { StartOptions } from '../common/types.js';
import type { CallerTransactions } from './caller-transaction.js';
import type { ResolvedEngineOptions } from './options.js';
import type { Starter } from './starter.js';
import { toStoredJson, validateName } from './validation.js';

export interface StartCallDependencies {
  options: ResolvedEngineOptions;
  starter: Starter;
  callerTransactions: CallerTransactions;
  /** Throws EngineDisposedError once the engine is disposed. */
  assertOpen(): void;
  /** Rejects when this engine may not run anything (not bootstrapped, disposed, deposed). */
  assertCanRun(): Promise<void>;
}

export class StartCalls {
  constructor(private readonly deps: StartCallDependencies) {}

  /** The started (or, per the id policy, existing) workflow's id. */
  async start(type: string, input: unknown, opts: StartOptions): Promise<string> {
    return this.startWith(type, input, opts);
  }

  /** As start, with the signal stored before a new run begins. */
  async signalWithStart(type: string, input: unknown, signal: { name: string; payload?: unknown }, opts: StartOptions): Promise<string> {
    this.deps.assertOpen();
    validateName('signal name', signal?.name);
    const payload = toStoredJson(signal.payload ?? null, `Payload of signal "${signal.name}"`, this.deps.options.maxPayloadBytes);
    return this.startWith(type, input, opts, { name: signal.name, payload });
  }

  private async startWith(type: string, input: unknown, opts: StartOptions, signal?: { name: string; payload: unknown }): Promise<string> {
    const { options, starter, callerTransactions } = this.deps;
    await this.deps.assertCanRun();
    const tracing = options.tracing.ready(); // undefined once loaded: no await per start
    if (tracing) await tracing;
    const tx = await callerTransactions.join(signal ? 'signalWithStart' : 'start', opts?.manager);
    return starter.start({ type, input, opts, signal, tx });
  }
}
