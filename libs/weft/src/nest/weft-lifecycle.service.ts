import { BeforeApplicationShutdown, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { WeftEngine } from '../engine/engine';

export type WeftBootstrapState = 'idle' | 'running' | 'ready' | 'failed';

/**
 * Starts the engine once the app is up, without holding the app's bootstrap while running
 * workflows are recovered, and disposes it before `onApplicationShutdown` hooks (TypeORM's
 * among them) close other connections.
 */
@Injectable()
export class WeftLifecycle implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('Weft');
  private bootstrapping: Promise<void> | undefined;
  private _state: WeftBootstrapState = 'idle';
  private _failure: string | undefined;
  private _readyAt: number | undefined;

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

  onApplicationBootstrap(): void {
    if (this.bootstrapping || this.engine.isDisposed) return;
    this._state = 'running';
    const started = Date.now();
    this.bootstrapping = this.engine.bootstrap().then(
      () => {
        this._state = 'ready';
        this._readyAt = Date.now();
        this.logger.log(`Engine bootstrapped in ${this._readyAt - started} ms`);
      },
      (err: unknown) => {
        this._state = 'failed';
        this._failure = (err as Error)?.message ?? String(err);
        this.logger.error(`Engine bootstrap failed: ${this._failure}`);
      },
    );
  }

  /** Resolves when the bootstrap has finished (successfully or not); see `state`. */
  async ready(): Promise<WeftBootstrapState> {
    await this.bootstrapping;
    return this._state;
  }

  async beforeApplicationShutdown(): Promise<void> {
    await this.bootstrapping;
    const already = this.engine.isDisposed;
    await this.engine.dispose();
    if (!already) this.logger.log('Engine disposed');
  }
}
