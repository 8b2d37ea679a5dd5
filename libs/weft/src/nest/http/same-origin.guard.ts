// The cross-site request forgery check on every Weft route (docs/operations.md#cross-site-requests).
import type { CanActivate, ExecutionContext } from '@nestjs/common';
import { CrossOriginRequestRefusedError, UnsupportedMediaTypeError } from '../nest-errors.js';

/** The header the dashboard sends with every call; any value will do, its presence is the point. */
export const CSRF_HEADER = 'x-weft-csrf';

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);
/** Browsers compute this header themselves; `none` is a request the user made (address bar, bookmark). */
const ALLOWED_FETCH_SITES = new Set(['same-origin', 'none']);

interface HttpRequest {
  method?: string;
  headers: Record<string, string | string[] | undefined>;
}

function headerOf(req: HttpRequest, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** `host[:port]` as a URL of `scheme` writes it (default ports dropped), or null if it is none. */
function hostOf(scheme: string, host: string): string | null {
  try {
    return new URL(`${scheme}//${host}`).host;
  } catch {
    return null;
  }
}

/** Whether `origin` names the host the request was sent to (directly, or through a proxy that says so). */
function sameHost(origin: string, req: HttpRequest): boolean {
  let parsed: URL;
  try {
    parsed = new URL(origin);
  } catch {
    return false; // includes "null": sandboxed frames, file: pages, redirects across sites
  }
  const targets = [headerOf(req, 'host'), headerOf(req, 'x-forwarded-host')?.split(',')[0]?.trim()];
  return targets.some((t) => t !== undefined && t !== '' && hostOf(parsed.protocol, t) === parsed.host);
}

/**
 * Refuses, on state-changing methods, what a page of another origin can make a browser send with
 * the user's cookies: anything `Sec-Fetch-Site` or `Origin` marks as cross-origin (403), and any
 * POST a browser sends without a preflight, i.e. not JSON and without `x-weft-csrf` (415). Reads
 * pass. A script without a browser (curl with x-api-key and JSON) sends neither header and passes.
 * Applied by controllers.ts to every Weft controller, after `http.guards`. On Express, a body that
 * is not JSON is refused (415) earlier still, by Weft's body reader (json-body.ts); this guard
 * covers bodiless POSTs, the origin, and other adapters.
 */
export class WeftSameOriginGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    const req = context.switchToHttp().getRequest<HttpRequest>();
    const method = (req.method ?? 'GET').toUpperCase();
    if (SAFE_METHODS.has(method)) return true;
    const site = headerOf(req, 'sec-fetch-site');
    if (site !== undefined && !ALLOWED_FETCH_SITES.has(site)) throw new CrossOriginRequestRefusedError(`Sec-Fetch-Site: ${site}`);
    const origin = headerOf(req, 'origin');
    if (origin !== undefined && !sameHost(origin, req)) throw new CrossOriginRequestRefusedError(`Origin: ${origin}`);
    // PUT, PATCH and DELETE always need a preflight from another origin; POST only when not "simple".
    if (method !== 'POST' || headerOf(req, CSRF_HEADER) !== undefined) return true;
    const media = (headerOf(req, 'content-type') ?? '').split(';')[0].trim().toLowerCase();
    if (media === 'application/json') return true;
    throw new UnsupportedMediaTypeError(
      `a POST with Content-Type "${media.slice(0, 80) || '(none)'}" and no x-weft-csrf header is what any page can send; ` +
        'a POST without a body needs that content type (or the header x-weft-csrf: 1) too',
    );
  }
}
