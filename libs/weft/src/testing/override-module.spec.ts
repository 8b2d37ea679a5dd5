import 'reflect-metadata';
import { Injectable, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import type { WorkflowContext } from '../common/types.js';
import { Workflow } from '../nest/decorators/workflow.decorator.js';
import { WeftModule } from '../nest/weft.module.js';
import { WeftTestEnvironment } from './environment.js';
import { WeftTestingModule } from './testing.module.js';

@Injectable()
@Workflow('napper')
class Napper {
  async run(ctx: WorkflowContext) {
    await ctx.sleep('3d');
    return 'rested';
  }
}

/** The app's WeftModule, kept in a constant so a test can name it in overrideModule. */
const WeftRoot = WeftModule.forRoot({ database: { url: 'postgres://nobody@127.0.0.1:1/none' }, isGlobal: true });

@Module({ imports: [WeftRoot], providers: [Napper] })
class AppModule {}

it("takes the place of the app's WeftModule through overrideModule: the app's database is never opened", async () => {
  const moduleRef = await Test.createTestingModule({ imports: [AppModule] })
    .overrideModule(WeftRoot)
    .useModule(WeftTestingModule.forRoot())
    .compile();
  const app = moduleRef.createNestApplication({ logger: false });
  await app.init();
  try {
    const env = app.get(WeftTestEnvironment);
    const h = await env.start('napper', null);
    await env.clock.advance('3d');
    expect(await env.result(h.workflowId)).toBe('rested');
  } finally {
    await app.close();
  }
});
