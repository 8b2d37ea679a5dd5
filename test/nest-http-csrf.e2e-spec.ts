import 'reflect-metadata';
import { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import { AppModule } from '../src/app.module.js';
import { createTestDatabase, TestDatabase } from './support/database.js';
import { order, setDemoEnv } from './support/demo.js';
import { waitFor } from './support/engine.js';
import { type Route, weftRoutes } from './support/weft-routes.js';

// docs/operations.md, "Cross-site requests" and "Signing a browser in": on the demo app, a page of
// another origin (another port of the same host included: SameSite does not tell ports apart)
// cannot make a signed-in browser change anything, and only the sign-in route reads the key from
// the address. The same attack from a real Chromium page is in test/dashboard.e2e-spec.ts.

const KEY = 'csrf-test-key';
const TARGET = 'order-o-csrf';

describe('cross-site requests to the Weft routes, on the demo app', () => {
  let tdb: TestDatabase;
  let app: INestApplication;
  let http: ReturnType<typeof request>;
  let host: string;
  let session: string;
  let restoreEnv: (() => void) | undefined;

  beforeAll(async () => {
    tdb = await createTestDatabase('weft_nest_http_csrf');
    restoreEnv = setDemoEnv({ DATABASE_URL: tdb.url, WEFT_API_KEY: KEY });
    const moduleRef = await Test.createTestingModule({ imports: [AppModule] }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.listen(0, '127.0.0.1');
    host = new URL((await app.getUrl()).replace('[::1]', '127.0.0.1')).host;
    http = request(app.getHttpServer());
  });

  afterAll(async () => {
    await app?.close();
    restoreEnv?.();
    await tdb?.drop();
  });

  describe("the demo's sign-in", () => {
    it('GET /weft/sign-in?key= sets a session cookie that is not the key and redirects to the dashboard', async () => {
      await http.get('/weft/sign-in?key=wrong').expect(401);
      const res = await http.get(`/weft/sign-in?key=${KEY}`).expect(303);
      expect(res.headers.location).toBe('/weft');
      expect(res.headers['cache-control']).toBe('no-store');
      const setCookie = String(res.headers['set-cookie']);
      expect(setCookie).toMatch(/^weft_session=[^;]+; Path=\/; Max-Age=\d+; HttpOnly; SameSite=Strict$/);
      session = setCookie.split(';')[0];
      expect(session).not.toContain(KEY);
      expect(session).not.toContain(encodeURIComponent(KEY));
      await http.get('/weft/workflows').set('cookie', session).expect(200);
      await http.get('/weft').set('cookie', session).expect(200);
    });

    it('no other route takes the key from the address; a cookie holding the key, or a forged session, is refused', async () => {
      for (const p of ['/weft', '/metrics', '/weft/workflows', '/weft/engines']) {
        const res = await http.get(`${p}?key=${KEY}`);
        expect([p, res.status, res.headers['set-cookie']]).toEqual([p, 401, undefined]);
      }
      for (const value of [KEY, `weft_api_key=${KEY}`, `9999999999.${'A'.repeat(43)}`, session.replace(/=\d+\./, '=9999999999.')]) {
        const cookie = value.includes('=') ? value : `weft_session=${value}`;
        expect([cookie, (await http.get('/weft/workflows').set('cookie', cookie)).status]).toEqual([cookie, 401]);
      }
    });
  });

  describe('state-changing routes', () => {
    let routes: Route[];

    beforeAll(async () => {
      await http
        .post('/orders')
        .send(order('o-csrf', { amount: 75_000 }))
        .expect(201); // waits for the approve signal
      await waitFor(async () => (await http.get('/orders/o-csrf')).body.stage === 'awaiting-approval', 'o-csrf awaiting approval');
      routes = weftRoutes(app).filter((r) => !['GET', 'HEAD', 'OPTIONS'].includes(r.method));
    });

    /** Concrete URLs: a workflow route acts on the waiting order, a schedule route on the nightly report. */
    const concrete = (path: string) =>
      path
        .replace(/^\/weft\/schedules\/:id/, '/weft/schedules/nightly-report')
        .replace(/:(\w+)/g, (_m, p: string) => ({ id: TARGET, name: 'approve' })[p] ?? 'x');

    /** What a page can make the browser send without asking first: simple content types, or no body. */
    const simpleBodies: Array<{ name: string; send: (req: request.Test) => request.Test }> = [
      { name: 'text/plain', send: (r) => r.set('content-type', 'text/plain').send('{"reason":"x","payload":"x"}') },
      { name: 'urlencoded', send: (r) => r.type('form').send('reason=x&payload=x') },
      { name: 'multipart', send: (r) => r.field('reason', 'x') },
      { name: 'no body', send: (r) => r },
    ];
    const call = (route: Route) => {
      const url = concrete(route.path);
      return http[route.method.toLowerCase() as 'post' | 'put' | 'patch' | 'delete'](url).set('cookie', session);
    };

    /** What an accepted request would change; the demo's heartbeat schedule may fire meanwhile, so its runs are left out. */
    const snapshot = async () => ({
      workflows: await tdb.query<{ id: string; status: string }>(
        "SELECT id, status FROM weft.weft_workflows WHERE id NOT LIKE 'heartbeat@%' AND id <> 'carrier-poller' ORDER BY id",
      ),
      messages: await tdb.query<{ id: string }>('SELECT id FROM weft.weft_messages WHERE workflow_id = $1 ORDER BY id', [TARGET]),
      schedules: await tdb.query<{ id: string; paused: boolean }>(
        'SELECT id, paused, overlap, cron, every_ms FROM weft.weft_schedules ORDER BY id',
      ),
    });

    it('covers every state-changing route the Weft module registers', () => {
      expect(routes).toEqual(
        expect.arrayContaining([
          { method: 'POST', path: '/weft/workflows' },
          { method: 'POST', path: '/weft/workflows/:id/cancel' },
          { method: 'POST', path: '/weft/workflows/:id/suspend' },
          { method: 'POST', path: '/weft/workflows/:id/resume' },
          { method: 'POST', path: '/weft/workflows/:id/signal/:name' },
          { method: 'POST', path: '/weft/schedules/:id/trigger' },
          { method: 'DELETE', path: '/weft/schedules/:id' },
        ]),
      );
    });

    it('refuses, with the signed-in cookie, whatever another origin sends (403), and a POST no browser would preflight (415); writes nothing', async () => {
      const before = await snapshot();
      const otherOrigins: Array<Record<string, string>> = [
        { origin: 'http://127.0.0.1:1' }, // another port of the same host: the same site for SameSite
        { origin: 'http://evil.example' },
        { origin: 'null' },
        { 'sec-fetch-site': 'same-site' },
        { 'sec-fetch-site': 'cross-site' },
        { 'sec-fetch-site': 'same-site', origin: `http://${host}` }, // a forged Origin does not undo the browser's verdict
      ];
      for (const route of routes) {
        for (const headers of otherOrigins) {
          // Even JSON with the dashboard's header: the origin alone decides.
          const res = await call(route).set(headers).set('x-weft-csrf', '1').send({});
          expect([route, headers, res.status, res.body.code]).toEqual([route, headers, 403, 'WEFT_CROSS_ORIGIN_REFUSED']);
        }
        for (const { name, send } of simpleBodies) {
          // A body that is not JSON is refused (415) by Weft's body reader before any guard runs;
          // without a body, the origin check answers.
          const crossSite = await send(call(route).set({ 'sec-fetch-site': 'same-site', origin: 'http://127.0.0.1:1' }));
          expect([route, name, crossSite.status, crossSite.body.code]).toEqual(
            name === 'no body' ? [route, name, 403, 'WEFT_CROSS_ORIGIN_REFUSED'] : [route, name, 415, 'WEFT_UNSUPPORTED_MEDIA_TYPE'],
          );
          // An old browser that sends neither header: only POST can be sent unasked, and it is refused.
          if (route.method !== 'POST') continue;
          const bare = await send(call(route));
          expect([route, name, bare.status, bare.body.code]).toEqual([route, name, 415, 'WEFT_UNSUPPORTED_MEDIA_TYPE']);
        }
      }
      expect(await snapshot()).toEqual(before);
      expect(before.workflows).toContainEqual({ id: TARGET, status: 'running' });
    });

    it('lets the dashboard (same origin, its header) and scripts (x-api-key and JSON, no Origin) act', async () => {
      const sameOrigin = { cookie: session, origin: `http://${host}`, 'sec-fetch-site': 'same-origin', 'x-weft-csrf': '1' };
      await http.post(`/weft/workflows/${TARGET}/suspend`).set(sameOrigin).expect(200); // no body: the header stands for JSON
      await http.post(`/weft/workflows/${TARGET}/resume`).set('x-api-key', KEY).set('content-type', 'application/json').expect(200);
      await http.post(`/weft/workflows/${TARGET}/signal/approve`).set('x-api-key', KEY).send({ payload: 'ops@example.com' }).expect(202);
      await waitFor(
        async () => (await http.get('/orders/o-csrf')).body.status === 'completed',
        'o-csrf completed after the approve signal',
      );
    });
  });
});
