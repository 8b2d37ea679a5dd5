import { BeforeApplicationShutdown, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { WeftEngine } from '../engine/engine.js';
import { WeftError } from '../common/errors.js';

export type WeftBootstrapState = 'idle' | 'running' | 'ready' | 'failed';

/**
 * docs/api.md (start-up errors): a fatal start-up error's message starts with its code, so the one line a process
 * prints (or Nest logs) as it exits names it. Prefixed in place: class and fields stay.
 */
export function withCodeFirst(err: unknown): unknown {
  if (!(err instanceof WeftError) || err.message.startsWith(`${err.code}: `)) return err;
  const before = err.message;
  err.message = `${err.code}: ${before}`;
  if (err.stack) err.stack = err.stack.replace(before, () => err.message);
  return err;
}

/**
 * Starts the engine once the app is up: app.init() waits for the ownership gates and rejects
 * with their typed error (fail fast), but not for the recovery of running workflows, which
 * goes on in the background (state 'running' until it is done). Disposes the engine before
 * `onApplicationShutdown` hooks (TypeORM's among them) close other connections.
 */
@Injectable()
export class WeftLifecycle implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('Weft');
  private bootstrapping: Promise<void> | undefined;
  private _state: WeftBootstrapState = 'idle';
  private _failure: string | undefined;
  private _readyAt: number | undefined;
  /** ready() called before the bootstrap began (another provider's onApplicationBootstrap) waits for it. */
  private begin!: () => void;
  private readonly begun = new Promise<void>((resolve) => (this.begin = resolve));

  constructor(private readonly engine: WeftEngine) {}

  get state(): WeftBootstrapState {
    return this._state;
  }

  /** Why the bootstrap failed, when state is 'failed'. */
  get failure(): string | undefined {
    return this._failure;
  }

  /** When the bootstrap finished (epoch ms). */
  get readyAt(): number | undefined {
    return this._readyAt;
  }

  async onApplicationBootstrap(): Promise<void> {
    if (this.bootstrapping || this.engine.isDisposed) return;
    this._state = 'running';
    const started = Date.now();
    const gates = this.engine.bootstrapGates();
    // The whole bootstrap, gates and recovery: what ready() and a shutdown wait for.
    this.bootstrapping = gates.then(
      ({ recovery }) =>
        recovery.then(
          () => {
            this._state = 'ready';
            this._readyAt = Date.now();
            this.logger.log(`Engine bootstrapped in ${this._readyAt - started} ms`);
          },
          (err: unknown) => this.logger.error(`Engine bootstrap failed: ${this.fail(err)}`),
        ),
      // Not logged: app.init() rejects with it, and Nest or the caller prints it once.
      (err: unknown) => void this.fail(err),
    );
    this.begin();
    try {
      await gates;
    } catch (err) {
      // Closed now, not at a close() that a process exiting on this error never calls.
      await this.engine.dispose().catch(() => undefined);
      throw withCodeFirst(err);
    }
  }

  private fail(err: unknown): string {
    this._state = 'failed';
    this._failure = (withCodeFirst(err) as Error)?.message ?? String(err);
    return this._failure;
  }

  /** Resolves when the bootstrap has finished (successfully or not); see `state`. */
  async ready(): Promise<WeftBootstrapState> {
    if (!this.bootstrapping && !this.engine.isDisposed) await this.begun;
    await this.bootstrapping;
    return this._state;
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.begin(); // a ready() still waiting gets 'idle': the app stops without having started
    await this.bootstrapping;
    const already = this.engine.isDisposed;
    await this.engine.dispose();
    if (!already) this.logger.log('Engine disposed');
  }
}
