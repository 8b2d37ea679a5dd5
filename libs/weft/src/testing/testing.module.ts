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

/**
 * `WeftTestingModule.forRoot(opts)` in `Test.createTestingModule({ imports: [...] })`, where the
 * app has `WeftModule.forRoot`: WeftModule on a schema of its own with a workflow clock that
 * skips time; the environment is `app.get(WeftTestEnvironment)` (docs/testing.md).
 */
@Module({})
export class WeftTestingModule {
  static forRoot(opts: WeftTestingModuleOptions = {}): DynamicModule {
    const { weft, http, metrics, dashboard, isGlobal, ...testing } = opts;
    // One set of parts per module instance, made when Nest first asks for them.
    let parts: Promise<TestParts> | undefined;
    const partsOnce = () => (parts ??= testParts(testing));
    return {
      module: WeftTestingModule,
      global: isGlobal ?? true,
      imports: [
        WeftModule.forRootAsync({
          isGlobal: isGlobal ?? true,
          http,
          metrics,
          dashboard,
          useFactory: async (): Promise<WeftModuleOptions> => {
            const p = await partsOnce();
            return { ...weft, database: { url: p.db.url }, schema: p.db.schema, clock: p.clock };
          },
        }),
      ],
      providers: [
        { provide: WEFT_TEST_PARTS, useFactory: partsOnce },
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
