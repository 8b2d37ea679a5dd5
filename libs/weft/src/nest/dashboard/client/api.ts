// Browser module `api.js` of the dashboard: calls to the Weft HTTP API, whose base the page's
// <meta name="weft-api"> gives (the server computes it, global prefix included).
export const API_JS = String.raw`
const meta = document.querySelector('meta[name="weft-api"]');
export const API_BASE = meta ? meta.getAttribute('content') : '/weft';

/** An answer that was not 2xx: the API's typed body { statusCode, code, message }, or what came instead. */
export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
  get text() {
    return this.status + ' ' + this.code + ': ' + this.message;
  }
}

/** How long a call may take, its body included: past it the call fails and the live refresh goes on (a hung request held it forever). */
export const API_DEADLINE_MS = 30000;

export async function api(path, options) {
  const o = options || {};
  const deadlineMs = o.timeoutMs || API_DEADLINE_MS;
  // x-weft-csrf: the API refuses a bodiless POST without it (a page of another origin cannot send it unasked).
  const headers = { accept: 'application/json', 'x-weft-csrf': '1' };
  const init = { method: o.method || 'GET', credentials: 'same-origin', headers, signal: AbortSignal.timeout(deadlineMs) };
  if (o.body !== undefined) {
    init.headers['content-type'] = 'application/json';
    init.body = JSON.stringify(o.body);
  }
  let res;
  let text;
  try {
    res = await fetch(API_BASE + path, init);
    text = await res.text();
  } catch (err) {
    if (err && err.name === 'TimeoutError') {
      const after = init.method === 'GET' ? '' : '; the action may still have been applied: refresh before you repeat it';
      throw new ApiError(0, 'TIMEOUT', 'The server did not answer within ' + deadlineMs / 1000 + ' s' + after);
    }
    throw new ApiError(0, 'NETWORK', 'The server did not answer (' + (err && err.message ? err.message : err) + ')');
  }
  let body = null;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    body = null;
  }
  if (!res.ok) {
    const code = body && typeof body.code === 'string' ? body.code : res.status === 401 || res.status === 403 ? 'UNAUTHORIZED' : 'HTTP_' + res.status;
    const message = body && body.message ? (Array.isArray(body.message) ? body.message.join('; ') : String(body.message)) : res.statusText;
    throw new ApiError(res.status, code, message);
  }
  return body;
}

export function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (Array.isArray(v)) for (const x of v) q.append(k, String(x)); // a repeated parameter (where=)
    else if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
  }
  const s = q.toString();
  return s ? '?' + s : '';
}

export const id = (workflowId) => encodeURIComponent(workflowId);
`;
