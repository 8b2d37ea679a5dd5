import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DASHBOARD_ASSETS, dashboardPage, dashboardUrls } from './assets.js';
import { assertDashboardPathFree, dashboardPath, httpWithDashboard } from './dashboard-options.js';

describe('dashboard assets', () => {
  it('every script parses as an ES module (node --check) and imports only served files', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'weft-dashboard-'));
    try {
      for (const [name, asset] of DASHBOARD_ASSETS) {
        if (!name.endsWith('.js')) continue;
        const file = path.join(dir, name.replace(/\.js$/, '.mjs'));
        writeFileSync(file, asset.body);
        execFileSync(process.execPath, ['--check', file], { stdio: 'pipe' });
        for (const [, imported] of asset.body.matchAll(/from '\.\/([\w.-]+)'/g))
          expect([name, DASHBOARD_ASSETS.has(imported)]).toEqual([name, true]);
        expect(asset.contentType).toBe('text/javascript; charset=utf-8');
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    expect(DASHBOARD_ASSETS.get('style.css')?.contentType).toBe('text/css; charset=utf-8');
  });

  it('finds the assets and the API under the path the page was requested at (an app global prefix included)', () => {
    expect(dashboardUrls('/weft', 'weft', 'weft')).toEqual({ assets: '/weft/dashboard/', api: '/weft' });
    expect(dashboardUrls('/weft/', 'weft', 'weft')).toEqual({ assets: '/weft/dashboard/', api: '/weft' });
    expect(dashboardUrls('/api/admin/ops', 'admin/ops', 'weft')).toEqual({ assets: '/api/admin/ops/dashboard/', api: '/api/weft' });
    expect(dashboardUrls('/weft', 'weft', '')).toEqual({ assets: '/weft/dashboard/', api: '' });
    // Never a protocol-relative address (another origin).
    expect(dashboardUrls('//evil.example/weft', 'weft', 'weft').assets).toBe('/evil.example/weft/dashboard/');
    expect(dashboardPage({ assets: '/a"b/', api: '/x<y' })).toContain('src="/a&#34;b/app.js"');
    expect(dashboardPage({ assets: '/a/', api: '/x<y' })).toContain('content="/x&#60;y"');
  });
});

describe('the dashboard option', () => {
  it.each([
    [true, 'weft'],
    [{}, 'weft'],
    [{ path: '/ops/weft/' }, 'ops/weft'],
    [undefined, null],
    [false, null],
  ])('%j: path %j', (dashboard, expected) => {
    expect(dashboardPath(dashboard)).toBe(expected);
  });

  it.each([
    ['a string', 'yes', 'dashboard'],
    ['an unknown key', { pth: 'x' }, 'dashboard'],
    ['an empty path', { path: '/' }, 'dashboard.path'],
    ['a path with a query', { path: 'weft?x' }, 'dashboard.path'],
    ['a path not a string', { path: 3 }, 'dashboard.path'],
  ])('%s: InvalidConfigurationError', (_what, dashboard, option) => {
    expect(() => dashboardPath(dashboard as never)).toThrow(expect.objectContaining({ code: 'WEFT_INVALID_CONFIGURATION', option }));
  });

  it('turns the HTTP API on when http is absent, keeps the given one, and refuses http: false', () => {
    expect(httpWithDashboard({ dashboard: true })).toBe(true);
    const http = { guards: [] };
    expect(httpWithDashboard({ dashboard: true, http })).toBe(http);
    expect(httpWithDashboard({ http: false })).toBe(false);
    expect(() => httpWithDashboard({ dashboard: true, http: false })).toThrow(
      expect.objectContaining({ code: 'WEFT_INVALID_CONFIGURATION', option: 'dashboard', message: expect.stringContaining('http: false') }),
    );
  });

  it('refuses a path the API routes already use', () => {
    expect(() => assertDashboardPathFree('weft/workflows', 'weft')).toThrow(expect.objectContaining({ option: 'dashboard.path' }));
    expect(() => assertDashboardPathFree('metrics', 'weft')).toThrow(expect.objectContaining({ option: 'dashboard.path' }));
    expect(() => assertDashboardPathFree('engines/x', '')).toThrow(expect.objectContaining({ option: 'dashboard.path' }));
    expect(() => assertDashboardPathFree('weft', 'weft')).not.toThrow();
  });
});
