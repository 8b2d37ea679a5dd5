// The files the dashboard serves: the page and its browser modules, shipped as strings inside the
// package (tsc emits them with the rest), so the built, the packed and the demo's copy all serve
// the same bytes with no copy step and nothing for the user to build.
import { createHash } from 'node:crypto';
import { API_JS } from './client/api.js';
import { BULK_JS } from './client/bulk.js';
import { APP_JS } from './client/app.js';
import { DOM_JS } from './client/dom.js';
import { ENGINES_JS } from './client/engines.js';
import { KINDS_JS } from './client/kinds.js';
import { SCHEDULES_JS } from './client/schedules.js';
import { QUEUES_JS } from './client/queues.js';
import { STYLE_CSS } from './client/style.js';
import { WORKFLOW_JS } from './client/workflow.js';
import { WORKFLOWS_JS } from './client/workflows.js';

export interface DashboardAsset {
  contentType: string;
  body: string;
  etag: string;
}

const JS = 'text/javascript; charset=utf-8';
const asset = (contentType: string, body: string): DashboardAsset => ({
  contentType,
  body,
  etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`,
});

/** By file name under `<dashboard path>/dashboard/`; nothing else is served there. */
export const DASHBOARD_ASSETS: ReadonlyMap<string, DashboardAsset> = new Map([
  ['app.js', asset(JS, APP_JS)],
  ['api.js', asset(JS, API_JS)],
  ['dom.js', asset(JS, DOM_JS)],
  ['workflows.js', asset(JS, WORKFLOWS_JS)],
  ['workflow.js', asset(JS, WORKFLOW_JS)],
  ['bulk.js', asset(JS, BULK_JS)],
  ['kinds.js', asset(JS, KINDS_JS)],
  ['engines.js', asset(JS, ENGINES_JS)],
  ['schedules.js', asset(JS, SCHEDULES_JS)],
  ['queues.js', asset(JS, QUEUES_JS)],
  ['style.css', asset('text/css; charset=utf-8', STYLE_CSS)],
]);

/** Scripts and styles from the page's own origin only; no inline code, no framing. */
export const DASHBOARD_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; " +
  "base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

const escapeAttr = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/**
 * The page's paths, from the path it was requested at: with an app's global prefix (`/api/weft`)
 * the assets and the API are under that prefix too. `requestPath` has no query string.
 */
export function dashboardUrls(requestPath: string, dashboardPath: string, apiPrefix: string): { assets: string; api: string } {
  // Repeated slashes collapsed: "//host/..." would be another origin to the browser.
  const path = `/${requestPath}/`.replace(/\/{2,}/g, '/');
  const tail = `/${dashboardPath}/`;
  const root = path.endsWith(tail) ? path.slice(0, path.length - tail.length + 1) : '/';
  return { assets: `${root}${dashboardPath}/dashboard/`, api: `${root}${apiPrefix}`.replace(/\/$/, '') };
}

export function dashboardPage(urls: { assets: string; api: string }): string {
  const assets = escapeAttr(urls.assets);
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="weft-api" content="${escapeAttr(urls.api)}">
<title>Weft</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="${assets}style.css">
<script type="module" src="${assets}app.js"></script>
</head>
<body>
<noscript>The Weft dashboard needs JavaScript (ES modules).</noscript>
</body>
</html>
`;
}
