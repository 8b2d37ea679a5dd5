// The `dashboard` option, read when the module is defined (its routes are fixed then, as for `http`).
import { InvalidConfigurationError } from '../../common/errors.js';
import type { WeftModuleExtras } from '../weft-module.options.js';

export const DEFAULT_DASHBOARD_PATH = 'weft';

/** Injection token of the page's `DashboardRoutes`, provided when the module is defined. */
export const WEFT_DASHBOARD_ROUTES = Symbol('WEFT_DASHBOARD_ROUTES');

export interface DashboardRoutes {
  /** The page's path, e.g. 'weft'. */
  path: string;
  /** The HTTP API's prefix the page reads, e.g. 'weft' ('' for none). */
  apiPrefix: string;
}
const DASHBOARD_KEYS = new Set(['path']);
const MAX_PATH_LENGTH = 200;

/** The page's route path without surrounding slashes (null when off). */
export function dashboardPath(dashboard: WeftModuleExtras['dashboard']): string | null {
  if (dashboard === undefined || dashboard === false) return null;
  if (dashboard === true) return DEFAULT_DASHBOARD_PATH;
  if (typeof dashboard !== 'object' || dashboard === null || Array.isArray(dashboard)) {
    throw new InvalidConfigurationError('dashboard', 'must be a boolean or { path? }');
  }
  const unknown = Object.keys(dashboard).filter((k) => !DASHBOARD_KEYS.has(k));
  if (unknown.length > 0) {
    throw new InvalidConfigurationError('dashboard', `unknown key(s) ${unknown.map((k) => `"${k}"`).join(', ')}; known: path`);
  }
  const raw = dashboard.path ?? DEFAULT_DASHBOARD_PATH;
  const path = typeof raw === 'string' ? raw.replace(/^\/+|\/+$/g, '') : null;
  // Not empty: the page would take over the app's `GET /`.
  if (path === null || path === '' || path.length > MAX_PATH_LENGTH || !/^[\w\-/.]+$/.test(path) || path.includes('//')) {
    throw new InvalidConfigurationError('dashboard.path', 'must be a non-empty path like "weft" or "admin/weft"');
  }
  return path;
}

/**
 * The `http` option the module runs with: the dashboard reads the HTTP API, so turning it on turns
 * the API on (its default prefix, no guards of its own) when `http` is absent. `http: false` says
 * the API must stay off, which the page cannot work without: refused rather than guessed.
 */
export function httpWithDashboard(extras: Pick<WeftModuleExtras, 'http' | 'dashboard'>): WeftModuleExtras['http'] {
  if (dashboardPath(extras.dashboard) === null) return extras.http;
  if (extras.http === false) {
    throw new InvalidConfigurationError(
      'dashboard',
      'reads the HTTP API, which http: false turns off; remove http: false (or give http: { guards }) or set dashboard: false',
    );
  }
  return extras.http ?? true;
}

/** The API routes the page must not shadow: `<prefix>/workflows`, `/schedules`, `/engines` and `/metrics`. */
export function assertDashboardPathFree(path: string, apiPrefix: string): void {
  const api = ['workflows', 'schedules', 'engines'].map((r) => (apiPrefix ? `${apiPrefix}/${r}` : r));
  const taken = [...api, 'metrics'].find((r) => path === r || path.startsWith(`${r}/`));
  if (taken !== undefined) {
    throw new InvalidConfigurationError('dashboard.path', `"${path}" is under the Weft route /${taken}; choose another path, e.g. "weft"`);
  }
}
