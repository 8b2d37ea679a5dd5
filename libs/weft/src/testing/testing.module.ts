import {
  type BeforeApplicationShutdown,
  type DynamicModule,
  Inject,
  Injectable,
  Module,
  type OnApplicationBootstrap,
  type OnApplicationShutdown,
} from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { WeftEngine } from '../engine/engine.js';
import type { WeftModuleExtras, WeftModuleOptions } from '../nest/weft-module.options.js';
import { WeftModule } from '../nest/weft.module.js';
import { testParts, type TestParts, WeftTestEnvironment, type WeftTestingOptions } from './environment.js';

const WEFT_TEST_PARTS = Symbol('WEFT_TEST_PARTS');

export interface WeftTestingModuleOptions extends WeftTestingOptions, Pick<WeftModuleExtras, 'http' | 'metrics' | 'dashboard'> {
  /** Further WeftModule options (ownership, queues, ...); the database, schema and clock are the kit's. */
  weft?: Omit<WeftModuleOptions, 'database' | 'schema' | 'clock' | 'http' | 'metrics' | 'dashboard'>;
  /** Register WeftModule's providers globally (default true, as an app's WeftModule usually is). */
  isGlobal?: boolean;
}

/**
 * Runs the environment's lifecycle inside the Nest app: autoSkip begins once the app is up, and
 * the schema goes after WeftModule disposed the engine (beforeApplicationShutdown).
 */
@Injectable()
class WeftTestLifecycle implements OnApplicationBootstrap, BeforeApplicationShutdown, OnApplicationShutdown {
  constructor(@Inject(WeftTestEnvironment) private readonly env: WeftTestEnvironment) {}

  onApplicationBootstrap(): void {
    this.env.started();
  }

  beforeApplicationShutdown(): void {
    this.env.stopAutoSkip();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.env.close();
  }
}

/** The environment's schema and clock, made once per compiled app (a module instance of its own). */
@Module({})
class WeftTestPartsModule {
  static with(testing: WeftTestingOptions): DynamicModule {
    return {
      module: WeftTestPartsModule,
      providers: [{ provide: WEFT_TEST_PARTS, useFactory: () => testParts(testing) }],
      exports: [WEFT_TEST_PARTS],
    };
  }
}

/**
 * `WeftTestingModule.forRoot(opts)` in `Test.createTestingModule({ imports: [...] })`, where the
 * app has `WeftModule.forRoot`: WeftModule on a schema of its own with a workflow clock that
 * skips time; the environment is `app.get(WeftTestEnvironment)` (docs/testing.md). Each compiled
 * app gets its own schema and clock, also when one `forRoot()` value is compiled again.
 */
@Module({})
export class WeftTestingModule {
  static forRoot(opts: WeftTestingModuleOptions = {}): DynamicModule {
    const { weft, http, metrics, dashboard, isGlobal, ...testing } = opts;
    const parts = WeftTestPartsModule.with(testing);
    return {
      module: WeftTestingModule,
      global: isGlobal ?? true,
      imports: [
        parts,
        WeftModule.forRootAsync({
          isGlobal: isGlobal ?? true,
          http,
          metrics,
          dashboard,
          imports: [parts],
          inject: [WEFT_TEST_PARTS],
          useFactory: (p: TestParts): WeftModuleOptions => ({
            ...weft,
            database: { url: p.db.url },
            schema: p.db.schema,
            clock: p.clock,
          }),
        }),
      ],
      providers: [
        {
          provide: WeftTestEnvironment,
          inject: [WeftEngine, WEFT_TEST_PARTS, ModuleRef],
          useFactory: (engine: WeftEngine, p: TestParts, moduleRef: ModuleRef) =>
            new WeftTestEnvironment(engine, p, false, (Service) => moduleRef.get(Service, { strict: false })),
        },
        WeftTestLifecycle,
      ],
      exports: [WeftTestEnvironment, WeftModule],
    };
  }
}
