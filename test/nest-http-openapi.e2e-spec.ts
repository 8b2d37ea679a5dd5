import 'reflect-metadata';
import { CanActivate, ExecutionContext, INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { WeftModule, Workflow, WorkflowContext } from '@weft/nest';
import request from 'supertest';
import { createTestDatabase, TestDatabase } from './support/database.js';

// The OpenAPI document at <prefix>/openapi.json (docs/api.md) against the routes Express really
// serves: every Weft route (workflows, schedules, dashboard, metrics) is in it, and nothing else;
// behind the same guards; its paths resolve under a global prefix.

@Workflow('echo')
class EchoWorkflow {
  async run(_ctx: WorkflowContext, input: unknown) {
    return input;
  }
}

class KeyGuard implements CanActivate {
  canActivate(ctx: ExecutionContext): boolean {
    return ctx.switchToHttp().getRequest<{ headers: Record<string, string> }>().headers['x-key'] === 'k';
  }
}

function expressRoutes(app: INestApplication): string[] {
  const router = (
    app.getHttpAdapter().getInstance() as { router: { stack: Array<{ route?: { path: string; methods: Record<string, boolean> } }> } }
  ).router;
  return router.stack.flatMap((layer) =>
    layer.route ? Object.keys(layer.route.methods).map((m) => `${m.toUpperCase()} ${layer.route!.path.replace(/(.)\/$/, '$1')}`) : [],
  );
}

describe('OpenAPI at <prefix>/openapi.json', () => {
  let tdb: TestDatabase;
  let app: INestApplication;

  beforeAll(async () => {
    tdb = await createTestDatabase('weft_openapi');
    const moduleRef = await Test.createTestingModule({
      imports: [
        WeftModule.forRoot({
          database: { url: tdb.url },
          schema: 'weft',
          shutdownGracePeriod: 0,
          http: { guards: [KeyGuard] },
          metrics: true,
          dashboard: true,
        }),
      ],
      providers: [EchoWorkflow],
    }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    app.setGlobalPrefix('api');
    await app.init();
  });

  afterAll(async () => {
    await app?.close();
    await tdb?.drop();
  });

  it('describes exactly the Weft routes Express serves, under the mount it was fetched through', async () => {
    const http = request(app.getHttpServer());
    await http.get('/api/weft/openapi.json').expect(403); // the same guards as every Weft route
    const res = await http.get('/api/weft/openapi.json').set('x-key', 'k').expect(200);
    const doc = res.body as { openapi: string; servers: Array<{ url: string }>; paths: Record<string, Record<string, unknown>> };
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.servers).toEqual([{ url: '/api' }]);
    const served = expressRoutes(app)
      .filter((r) => / \/api\/(weft|metrics)(\/|$)/.test(r))
      .map((r) => r.replace(' /api', ' ').replace(/:(\w+)/g, '{$1}'))
      .sort();
    const described = Object.entries(doc.paths)
      .flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`))
      .sort();
    expect(described).toEqual(served);
    expect(described).toEqual(
      expect.arrayContaining(['POST /weft/workflows/{id}/fork', 'GET /weft/openapi.json', 'GET /metrics', 'GET /weft']),
    );
  });
});
