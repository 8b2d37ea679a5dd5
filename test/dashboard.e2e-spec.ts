import 'reflect-metadata';
import { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { existsSync, mkdirSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import puppeteer, { type Browser, type HTTPResponse, type Page } from 'puppeteer-core';
import { WeftEngine, Workflow, type WorkflowContext } from '@weft/nest';
import { AppModule } from '../src/app.module.js';
import { createTestDatabase, TestDatabase } from './support/database.js';
import { order, setDemoEnv } from './support/demo.js';
import { waitFor, within } from './support/engine.js';

// The operator dashboard (docs/operations.md#dashboard) in a real headless Chromium from Debian's
// packages, against the demo app on a real PostgreSQL. Screenshots go to docs/images/.

const CHROME = process.env.CHROME_PATH ?? '/usr/bin/chromium';
const KEY = 'dashboard-test-key';
const IMAGES = path.join(import.meta.dirname, '..', 'docs', 'images');
const UI_TIMEOUT = 15_000;
// Every DevTools call (a click, a key typed, an evaluate, a screenshot) and every request to the app
// gives up after these, with what it waited for: Puppeteer's own protocol timeout is 180 s and
// fetch has none, past vitest's 60 s for a whole test, so a page or a server that stopped
// answering held each test that used it to that 60 s, naming nothing (CI: six in a row).
const PROTOCOL_TIMEOUT = 20_000;
const HTTP_TIMEOUT = 15_000;

/** Test-only (beside the demo's): three ticks, then `n` more per 'more' signal until one of 0 closes the stream. */
@Workflow('ticker')
class TickerWorkflow {
  async run(ctx: WorkflowContext) {
    let i = 0;
    for (; i < 3; i++) await ctx.writeStream('ticks', { tick: i });
    for (let n = await ctx.waitForSignal<number>('more'); n; n = await ctx.waitForSignal<number>('more')) {
      for (const end = i + n; i < end; i++) await ctx.writeStream('ticks', { tick: i });
    }
    await ctx.closeStream('ticks');
    return i;
  }
}

describe('the dashboard in Chromium, on the demo app', () => {
  let tdb: TestDatabase;
  let app: INestApplication;
  let url: string;
  let browser: Browser;
  let page: Page;
  const pageErrors: string[] = [];
  /** What went wrong with the browser itself (a crash, a lost connection, its last words), shown when a test fails. */
  const trouble: string[] = [];
  const browserLog: string[] = [];
  let signedIn = false;
  let restoreEnv: (() => void) | undefined;

  /** A request to the app, with a deadline. */
  const call = (p: string, init: RequestInit = {}) => fetch(url + p, { signal: AbortSignal.timeout(HTTP_TIMEOUT), ...init });
  const post = (p: string, body: unknown) =>
    call(p, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const status = async (id: string) =>
    (await tdb.query<{ status: string }>('SELECT status FROM weft.weft_workflows WHERE id = $1', [id]))[0]?.status;
  const awaitingApproval = (orderId: string) =>
    waitFor(
      async () => ((await (await call(`/orders/${orderId}`)).json()) as { stage?: string }).stage === 'awaiting-approval',
      `${orderId} awaiting approval`,
    );
  const shot = (view: string, fullPage = false) => page.screenshot({ path: path.join(IMAGES, `dashboard-${view}.png`), fullPage });
  // Code run in the page is given as text: this project's TypeScript has no DOM library.
  /** Opens a view by its address and waits for what it renders. */
  async function open(hash: string, selector: string) {
    await page.evaluate(`location.hash = ${JSON.stringify(hash)}`);
    await page.waitForSelector(selector, { timeout: UI_TIMEOUT });
  }

  async function launch() {
    // The Debian launcher and Puppeteer's defaults give the rest (--disable-dev-shm-usage among them).
    browser = await puppeteer.launch({
      executablePath: CHROME,
      headless: true,
      timeout: 30_000,
      protocolTimeout: PROTOCOL_TIMEOUT,
      args: ['--no-sandbox', '--headless=new'],
    });
    const b = browser;
    b.process()?.stderr?.on('data', (chunk: Buffer) => {
      browserLog.push(...String(chunk).split('\n').filter(Boolean));
      browserLog.splice(0, Math.max(0, browserLog.length - 30));
    });
    b.on('disconnected', () => trouble.push(`the browser disconnected (exit code ${b.process()?.exitCode ?? 'none yet'})`));
  }

  /** A fresh page (signed in once the sign-in test has run), listened to for errors and crashes. */
  async function newPage() {
    const p = await browser.newPage();
    p.setDefaultTimeout(UI_TIMEOUT);
    await p.setViewport({ width: 1280, height: 800 });
    p.on('error', (err) => trouble.push(`the page crashed: ${err.message}`));
    p.on('pageerror', (err) => pageErrors.push(String(err)));
    p.on('console', (m) => {
      // The browser logs every non-2xx fetch; the one 404 is the typed-error case below.
      if (m.type() === 'error' && !/status of 404/.test(m.text())) pageErrors.push(m.text());
    });
    if (signedIn) await p.goto(`${url}/weft/sign-in?key=${KEY}`, { waitUntil: 'load' });
    page = p;
  }

  /** Closes the browser, killing it when it does not close in time. */
  async function closeBrowser() {
    const b = browser;
    try {
      await within('Chromium to close', 10_000, b.close());
    } catch (err) {
      b.process()?.kill('SIGKILL');
      throw err;
    }
  }

  beforeAll(async () => {
    // Fails (never skips) without the browser: this is the dashboard's only test in a real one.
    // `npm test` installs it first when it may (scripts/prepare-tests.js).
    if (!existsSync(CHROME)) {
      throw new Error(
        `No Chromium at ${CHROME}: run "npm test" (it installs Debian's when it may), or "sudo apt-get install chromium" (or set CHROME_PATH to a Chromium binary)`,
      );
    }
    tdb = await createTestDatabase('weft_dashboard');
    restoreEnv = setDemoEnv({ DATABASE_URL: tdb.url, WEFT_API_KEY: KEY });
    const moduleRef = await Test.createTestingModule({ imports: [AppModule], providers: [TickerWorkflow] }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.listen(0, '127.0.0.1');
    url = (await app.getUrl()).replace('[::1]', '127.0.0.1');
    await launch();
    await newPage();
    mkdirSync(IMAGES, { recursive: true });
  });

  beforeEach(({ onTestFailed }) => {
    const seen = trouble.length;
    onTestFailed(() => {
      if (trouble.length > seen) console.error(`The browser, during this test: ${trouble.slice(seen).join('; ')}`);
      console.error(`Chromium's last lines:\n${browserLog.join('\n')}`);
    });
  });

  // A page that stopped answering (a hung or crashed renderer, a browser gone) takes a new browser,
  // so one stuck test does not take every later one down with it (a new page could land in the
  // same stuck renderer); what the page showed is lost, not the data.
  afterEach(async () => {
    try {
      if (!browser.connected) throw new Error('the browser is gone');
      await within('the page to answer', 5_000, page.evaluate('1'));
    } catch (err) {
      trouble.push(`the browser was replaced: ${(err as Error).message}`);
      await closeBrowser().catch(() => undefined);
      await launch();
      await newPage();
    }
  });

  afterAll(async () => {
    // Each step runs whatever became of the ones before it: a browser that would not close still
    // lets the app close and the database go.
    const failures: unknown[] = [];
    const step = async (run: () => Promise<unknown> | undefined) => {
      try {
        await run();
      } catch (err) {
        failures.push(err);
      }
    };
    if (browser) await step(closeBrowser);
    await step(() => app && within('the app to close', 20_000, app.close()));
    restoreEnv?.();
    await step(() => tdb?.drop());
    if (failures.length) throw new AggregateError(failures, `closing the dashboard test: ${failures.map(String).join('; ')}`);
  });

  it('refuses the page, its assets and the API it reads without the key (401)', async () => {
    for (const p of ['/weft', '/weft/dashboard/app.js', '/weft/workflows', '/weft/engines', '/weft/workflows/x/timeline']) {
      expect([p, (await call(p)).status]).toEqual([p, 401]);
      expect([p, (await call(p, { headers: { cookie: 'weft_session=wrong' } })).status]).toEqual([p, 401]);
    }
    expect((await call(`/weft?key=${KEY}`)).status).toBe(401); // only the sign-in route reads the key from the address
    expect((await call(`/weft/sign-in?key=wrong`, { redirect: 'manual' })).status).toBe(401);
    const signed = await call(`/weft/sign-in?key=${KEY}`, { redirect: 'manual' });
    expect([signed.status, signed.headers.get('location')]).toEqual([303, '/weft']);
    const cookie = signed.headers.get('set-cookie') ?? '';
    expect(cookie).toMatch(/^weft_session=[^;]+; Path=\/; Max-Age=\d+; HttpOnly; SameSite=Strict$/);
    const home = await call(`/weft`, { headers: { cookie: cookie.split(';')[0] } });
    expect(home.status).toBe(200);
    expect(home.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect((await call(`/weft/dashboard/nope.js`, { headers: { 'x-api-key': KEY } })).status).toBe(404);
  });

  it("bounds the new routes' input: 400 with a code for a bad limit, an unknown parameter, a long id prefix", async () => {
    const code = async (p: string) => {
      const res = await call(p, { headers: { 'x-api-key': KEY } });
      return [p, res.status, ((await res.json()) as { code?: string }).code];
    };
    for (const p of [
      '/weft/workflows/x/timeline?limit=0',
      '/weft/workflows/x/timeline?limit=1001',
      '/weft/workflows/x/timeline?after=-1',
      '/weft/workflows/x/timeline?bogus=1',
      '/weft/engines?bogus=1',
      `/weft/workflows?idPrefix=${'a'.repeat(256)}`,
    ]) {
      expect(await code(p)).toEqual([p, 400, 'WEFT_INVALID_ARGUMENT']);
    }
    expect(await code(`/weft/workflows/${'x'.repeat(300)}/timeline`)).toEqual([
      `/weft/workflows/${'x'.repeat(300)}/timeline`,
      400,
      'WEFT_INVALID_WORKFLOW_ID',
    ]);
    expect(await code('/weft/workflows/x/timeline')).toEqual(['/weft/workflows/x/timeline', 404, 'WEFT_WORKFLOW_NOT_FOUND']);
  });

  it('lists a started workflow, filtered by id prefix', async () => {
    await post('/orders', order('o-dash', { amount: 75_000 })); // waits for the approve signal
    await post('/orders', order('o-small'));
    await post('/orders', order('o-refund', { address: 'Nowhere Lane' }));
    await awaitingApproval('o-dash');
    // The sign-in link signs the browser in (a session cookie) and lands on the dashboard, as the demo documents.
    await page.goto(`${url}/weft/sign-in?key=${KEY}`, { waitUntil: 'load' });
    signedIn = true;
    expect(new URL(page.url()).pathname).toBe('/weft');
    await page.waitForSelector('#wf-table tr[data-id="order-o-dash"][data-status="running"]', { timeout: UI_TIMEOUT });
    await page.waitForSelector('#wf-table tr[data-id="order-o-small"][data-status="completed"]', { timeout: UI_TIMEOUT });
    await shot('list');
    await page.type('#filter-prefix', 'order-o-d');
    await page.waitForFunction("[...document.querySelectorAll('#wf-table tbody tr')].map((r) => r.dataset.id).join() === 'order-o-dash'", {
      timeout: UI_TIMEOUT,
    });
    expect(await page.evaluate('location.hash')).toBe('#/workflows?prefix=order-o-d');
  });

  it("shows a workflow's timeline; a signal sent from the page reaches it", async () => {
    await page.click('#wf-table a[href="#/workflow/order-o-dash"]');
    await page.waitForSelector('#timeline tr[data-kind="step"][data-status="completed"]', { timeout: UI_TIMEOUT });
    const names = await page.$$eval('#timeline tbody tr td:nth-child(3)', (tds) => tds.map((td) => td.textContent));
    expect(names.slice(0, 2)).toEqual(['WarehouseService.reserve', 'PaymentsService.charge']);
    expect(await page.$eval('#wf-claim', (el) => el.textContent)).toContain('workflow-lease');

    await page.type('#signal-name', 'approve');
    await page.type('#signal-payload', '"ops@example.com"');
    await page.click('#signal-send');
    await page.waitForSelector('.flash.ok', { timeout: UI_TIMEOUT });
    // Delivered: the engine consumed it (recorded at a seq), and the order went on to completion.
    const consumed = await waitFor(async () => {
      const rows = await tdb.query<{ consumed_seq: number | null; payload: unknown }>(
        "SELECT consumed_seq, payload FROM weft.weft_messages WHERE workflow_id = 'order-o-dash' AND name = 'approve'",
      );
      return rows[0]?.consumed_seq !== null && rows[0]?.consumed_seq !== undefined ? rows[0] : null;
    }, 'the approve signal consumed');
    expect(consumed?.payload).toBe('ops@example.com');
    await waitFor(async () => (await status('order-o-dash')) === 'completed', 'order-o-dash completed', 20_000);
    await page.waitForSelector('#view[data-status="completed"] #messages tr[data-name="approve"][data-consumed="true"]', {
      timeout: UI_TIMEOUT,
    });
    await page.waitForSelector('#children a[href^="#/workflow/order-o-dash"]', { timeout: UI_TIMEOUT });
    await shot('workflow', true); // the whole page: timeline, messages, children
  });

  it("tails a workflow's stream: the entries already written, then each new one as it arrives, until the close", async () => {
    const engine = app.get(WeftEngine);
    const h = await engine.start('ticker', {}, { workflowId: 'ticker-1' });
    await open('#/workflow/ticker-1', '#streams tr[data-key="ticks"] button[data-tail="ticks"]');
    await page.click('button[data-tail="ticks"]');
    await page.waitForSelector('#stream-entries tr[data-offset="2"]', { timeout: UI_TIMEOUT });
    await h.signal('more', 2);
    await page.waitForSelector('#stream-entries tr[data-offset="4"]', { timeout: UI_TIMEOUT });
    // The page's refresh redraws the list, not the tail: the rows stay, once each, in order.
    const refreshed = await page.evaluate('document.body.dataset.refreshed');
    await page.waitForFunction(`document.body.dataset.refreshed !== ${JSON.stringify(refreshed)}`, { timeout: UI_TIMEOUT });
    await h.signal('more', 1);
    await page.waitForSelector('#stream-entries tr[data-offset="5"]', { timeout: UI_TIMEOUT });
    const offsets = async () =>
      page.$$eval('#stream-entries tbody tr', (trs) => trs.map((tr) => (tr as unknown as { dataset: { offset: string } }).dataset.offset));
    expect(await offsets()).toEqual(['0', '1', '2', '3', '4', '5']);
    expect(await page.$eval('#stream-entries tr[data-offset="5"]', (tr) => tr.textContent)).toContain('"tick": 5');
    await shot('stream');
    await h.signal('more', 0);
    await page.waitForSelector('#stream-entries[data-ended="true"]', { timeout: UI_TIMEOUT });
    expect(await h.result({ timeout: '10s' })).toBe(6);
    // The list, at its next refresh: six entries, closed.
    await page.waitForFunction(`/^ticks6closed/.test(document.querySelector('#streams tr[data-key="ticks"]')?.textContent ?? '')`, {
      timeout: UI_TIMEOUT,
    });
  });

  it('suspends, resumes and cancels from the page', async () => {
    await post('/orders', order('o-stop', { amount: 80_000 }));
    await awaitingApproval('o-stop');
    await open('#/workflow/order-o-stop', '#view[data-status="running"] [data-action="suspend"]:not([disabled])');
    await page.click('[data-action="suspend"]');
    await waitFor(async () => (await status('order-o-stop')) === 'suspended', 'order-o-stop suspended');
    await page.waitForSelector('#view[data-status="suspended"] [data-action="resume"]:not([disabled])', { timeout: UI_TIMEOUT });
    await page.click('[data-action="resume"]');
    await waitFor(async () => (await status('order-o-stop')) === 'running', 'order-o-stop running again');
    await page.waitForSelector('#view[data-status="running"] [data-action="cancel"]:not([disabled])', { timeout: UI_TIMEOUT });

    await page.click('[data-action="cancel"]'); // arms
    await page.waitForSelector('[data-action="cancel"][data-armed="true"]', { timeout: UI_TIMEOUT });
    await page.click('[data-action="cancel"]');
    await waitFor(async () => (await status('order-o-stop')) === 'cancelled', 'order-o-stop cancelled');
    await page.waitForSelector('#view[data-status="cancelled"] [data-action="cancel"][disabled]', { timeout: UI_TIMEOUT });
  });

  it('a page on another port of the same host cannot act with the signed-in cookie (a form post, a no-cors fetch)', async () => {
    await post('/orders', order('o-xsite', { amount: 90_000 }));
    await awaitingApproval('o-xsite');
    const target = `${url}/weft/workflows/order-o-xsite`;
    // Requests a browser sends without asking the server first: a text/plain form and a no-cors fetch.
    // SameSite=Strict does not stop them: another port of 127.0.0.1 is the same site.
    const html =
      `<!doctype html><form method="post" enctype="text/plain" action="${target}/cancel">` +
      `<input name='{"reason":"forged","pad":"' value='"}'></form><script>` +
      `fetch(${JSON.stringify(`${target}/suspend`)}, { method: 'POST', mode: 'no-cors', credentials: 'include' })` +
      `.finally(() => document.forms[0].submit());</script>`;
    const other = createServer((_req, res) => res.setHeader('content-type', 'text/html').end(html));
    await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve));
    const attacker = await browser.newPage(); // the same browser: it carries the dashboard's cookie
    attacker.setDefaultTimeout(UI_TIMEOUT);
    try {
      const answers: Record<string, number> = {};
      attacker.on('response', (r: HTTPResponse) => {
        const action = /\/(cancel|suspend)$/.exec(new URL(r.url()).pathname)?.[1];
        if (action) answers[action] = r.status();
      });
      await attacker.goto(`http://127.0.0.1:${(other.address() as AddressInfo).port}/`);
      await waitFor(() => Object.keys(answers).length === 2, 'both forged requests answered');
      // The bodiless fetch meets the origin check (403); the form's text/plain body, Weft's body reader (415).
      expect(answers).toEqual({ suspend: 403, cancel: 415 });
    } finally {
      await within('the attacking page to close', UI_TIMEOUT, attacker.close());
      other.close();
    }
    expect(await status('order-o-xsite')).toBe('running');
  });

  it('forks a workflow from a step on its page; the fork shows where it came from', async () => {
    await open('#/workflow/order-o-small', '#view[data-status="completed"] [data-action="fork"]');
    expect(await page.$eval('[data-action="retry"]', (el) => (el as unknown as { disabled: boolean }).disabled)).toBe(true); // not failed
    await page.type('#fork-step', 'PaymentsService.charge');
    await page.type('#fork-id', 'order-o-small-fork');
    await page.click('[data-action="fork"]');
    await page.waitForSelector('.flash.ok', { timeout: UI_TIMEOUT });
    await waitFor(async () => (await status('order-o-small-fork')) === 'completed', 'the fork completed', 20_000);
    await open('#/workflow/order-o-small-fork', '#view[data-status="completed"] #wf-summary a[href="#/workflow/order-o-small"]');
    expect(await page.$eval('#wf-summary', (el) => el.textContent)).toContain('forked from');
    expect(pageErrors).toEqual([]);
  });

  it('cancels every workflow a filter matches: the count, a second click to confirm, progress and a summary', async () => {
    for (const id of ['o-bulk-1', 'o-bulk-2']) {
      await post('/orders', order(id, { amount: 90_000 }));
      await awaitingApproval(id);
    }
    await open('#/workflows?prefix=order-o-bulk-&order=newest', '#wf-table tr[data-id="order-o-bulk-1"]');
    await page.select('#bulk-action', 'cancel');
    await page.click('#bulk-go');
    await page.waitForFunction("document.querySelector('#bulk-go').textContent.startsWith('2 match')", { timeout: UI_TIMEOUT });
    expect(await status('order-o-bulk-1')).toBe('running'); // nothing done before the confirmation
    await page.click('#bulk-go');
    await page.waitForFunction("document.querySelector('#bulk-progress').textContent === '2/2 cancelled'", { timeout: UI_TIMEOUT });
    expect(await page.$eval('.flash.ok span', (el) => el.textContent)).toBe('Cancelled 2 of 2.');
    // Each was asked; its code takes the request and ends it (docs/cancellation.md).
    await waitFor(
      async () => (await status('order-o-bulk-1')) === 'cancelled' && (await status('order-o-bulk-2')) === 'cancelled',
      'both cancelled',
    );
    expect(pageErrors).toEqual([]);
  });

  it("shows the API's typed error", async () => {
    await open('#/workflow/no-such-workflow', '.flash.error');
    expect(await page.$eval('.flash.error', (el) => el.textContent)).toContain('404 WEFT_WORKFLOW_NOT_FOUND');
  });

  it('shows the engines with their claims', async () => {
    const engines = (await (await call(`/weft/engines`, { headers: { 'x-api-key': KEY } })).json()) as {
      self: { engineId: string };
    };
    const engineId = engines.self.engineId;
    await open('#/engines', `#engines-table tr[data-engine="${engineId}"]`);
    expect(await page.$eval('#engines-mode', (el) => el.textContent)).toContain('workflow-lease');
    await shot('engines');
  });

  it('lists the schedules with next fire times; triggers one', async () => {
    await open('#/schedules', '#schedules-table tr[data-schedule="nightly-report"] time');
    await page.click('#schedules-table tr[data-schedule="nightly-report"] [data-action="trigger"]');
    await page.waitForSelector('.flash.ok', { timeout: UI_TIMEOUT });
    const text = await page.$eval('.flash.ok span', (el) => el.textContent);
    const workflowId = /started (nightly-report@\S+)/.exec(text ?? '')?.[1];
    expect(workflowId).toBeDefined();
    await waitFor(async () => (await status(workflowId!)) === 'completed', 'the triggered report completed');
    await page.waitForSelector('#schedules-table tr[data-schedule="nightly-report"] .badge.s-completed', { timeout: UI_TIMEOUT });
    await shot('schedules');
    expect(pageErrors).toEqual([]);
  });

  it("lists the demo's payments queue with its limits and how many it runs", async () => {
    await open('#/queues', '#queues-table tr[data-queue="payments"]');
    const row = await page.$eval('#queues-table tr[data-queue="payments"]', (el) => el.textContent ?? '');
    expect(row).toContain('20 per 1.0 s');
    expect(await page.$eval('#queues-table tr[data-queue="payments"] td:nth-child(4)', (el) => el.textContent)).toBe('50');
    await shot('queues');
    expect(pageErrors).toEqual([]);
  });

  it("shows a partitioned queue's limits per key and, on its page, its busiest keys with work", async () => {
    const engine = app.get(WeftEngine);
    // The ticker waits for signals once it has ticked: one per key runs (partition.concurrency 1), the rest wait.
    for (let i = 0; i < 3; i++)
      await engine.start('ticker', {}, { workflowId: `export-acme-${i}`, queue: 'exports', partitionKey: 'acme' });
    await engine.start('ticker', {}, { workflowId: 'export-globex-0', queue: 'exports', partitionKey: 'globex' });
    await waitFor(
      async () => (await status('export-acme-0')) === 'running' && (await status('export-globex-0')) === 'running',
      'one export per tenant running',
    );
    await open('#/queues', '#queues-table tr[data-queue="exports"] [data-action="partitions"]');
    expect(await page.$eval('#queues-table tr[data-queue="exports"] td:nth-child(7)', (el) => el.textContent)).toContain('1 at once');
    expect(await page.$eval('#queues-table tr[data-queue="payments"] td:nth-child(7)', (el) => el.textContent)).toBe('not partitioned');
    await page.click('#queues-table tr[data-queue="exports"] [data-action="partitions"]');
    await page.waitForSelector('#partitions-table tr[data-partition="acme"]', { timeout: UI_TIMEOUT });
    const cells = (key: string) =>
      page.$$eval(`#partitions-table tr[data-partition="${key}"] td`, (tds) => tds.map((td) => td.textContent ?? ''));
    const acme = await cells('acme');
    expect(acme.slice(0, 3)).toEqual(['acme', '2', '1']);
    expect(acme[3]).toMatch(/\d/); // the oldest waiting one's age
    expect(await cells('globex')).toEqual(['globex', '0', '1', 'none waiting']);
    expect(await page.$eval('#partitions-summary', (el) => el.textContent)).toBe('2 keys with work');
    expect(await page.$eval('#queue-limits', (el) => el.textContent)).toContain('per key: concurrency1');
    await shot('queue-partitions');
    for (const id of ['export-acme-0', 'export-acme-1', 'export-acme-2', 'export-globex-0']) await engine.cancel(id);
    expect(pageErrors).toEqual([]);
  });
});
