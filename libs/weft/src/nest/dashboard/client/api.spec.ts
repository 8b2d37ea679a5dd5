import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { API_JS } from './api.js';

interface ApiModule {
  api(path: string, options?: { method?: string; body?: unknown; timeoutMs?: number }): Promise<unknown>;
  API_DEADLINE_MS: number;
}

// The browser module run in Node (which has fetch and AbortSignal.timeout) against a real server
// that answers, refuses, or holds the request.
describe('the dashboard client api()', () => {
  let server: http.Server;
  let mod: ApiModule;
  let dir: string;
  const held: http.ServerResponse[] = [];
  const closed: string[] = [];

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      req.on('close', () => {
        if (!res.writableEnded) closed.push(req.url ?? '');
      });
      if (req.url === '/weft/ok') return res.setHeader('content-type', 'application/json').end('{"ok":true}');
      if (req.url === '/weft/refused')
        return res.writeHead(409, { 'content-type': 'application/json' }).end('{"statusCode":409,"code":"WEFT_X","message":"no"}');
      if (req.url === '/weft/half-body') res.writeHead(200, { 'content-type': 'application/json' }).write('{"ok":');
      held.push(res); // /weft/hang: never answers
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/weft`;
    (globalThis as { document?: unknown }).document = { querySelector: () => ({ getAttribute: () => base }) };
    dir = mkdtempSync(path.join(tmpdir(), 'weft-dashboard-api-'));
    const file = path.join(dir, 'api.mjs');
    writeFileSync(file, API_JS);
    mod = (await import(pathToFileURL(file).href)) as ApiModule;
  });

  afterAll(async () => {
    for (const res of held) res.destroy();
    await new Promise((resolve) => server.close(resolve));
    delete (globalThis as { document?: unknown }).document;
    rmSync(dir, { recursive: true, force: true });
  });

  it('returns the body of a 2xx and throws the typed body of a refusal', async () => {
    await expect(mod.api('/ok')).resolves.toEqual({ ok: true });
    await expect(mod.api('/refused', { method: 'POST', body: {} })).rejects.toMatchObject({ status: 409, code: 'WEFT_X', message: 'no' });
  });

  it('gives up on a server that holds the request, and on one that stops mid-body, at its deadline', async () => {
    expect(mod.API_DEADLINE_MS).toBeGreaterThan(0);
    expect(mod.API_DEADLINE_MS).toBeLessThanOrEqual(60_000);
    await expect(mod.api('/hang', { timeoutMs: 300 })).rejects.toMatchObject({
      status: 0,
      code: 'TIMEOUT',
      message: expect.stringMatching(/within 0.3 s$/),
    });
    await expect(mod.api('/half-body', { timeoutMs: 300 })).rejects.toMatchObject({ code: 'TIMEOUT' });
    // A POST that timed out may have been applied: the message says so.
    await expect(mod.api('/hang', { method: 'POST', body: {}, timeoutMs: 300 })).rejects.toMatchObject({
      code: 'TIMEOUT',
      message: expect.stringContaining('may still have been applied'),
    });
    // The request is abandoned, not left open on the server.
    await vi.waitFor(() => expect([...closed].sort()).toEqual(['/weft/half-body', '/weft/hang', '/weft/hang']), { timeout: 5000 });
  });
});
