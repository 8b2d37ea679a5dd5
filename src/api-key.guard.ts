import { CanActivate, ExecutionContext, Injectable, Logger, UnauthorizedException } from '@nestjs/common';
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/** 401 with the same `{ statusCode, code, message }` body as Weft's own errors. */
export class ApiKeyRejectedError extends UnauthorizedException {
  readonly code = 'DEMO_API_KEY_REJECTED';
  constructor() {
    super({
      statusCode: 401,
      code: 'DEMO_API_KEY_REJECTED',
      message: 'Send the Weft API key in the x-api-key header; in a browser, open the dashboard once as /weft?key=<the key>.',
    });
  }
}

/** The cookie a browser carries the key in: it cannot send a header when it navigates. */
export const API_KEY_COOKIE = 'weft_api_key';

/** Equal-length digests, so neither the comparison time nor a length check tells anything about the key. */
const digest = (s: string) => createHash('sha256').update(s).digest();

interface Request {
  method?: string;
  url?: string;
  secure?: boolean;
  headers: Record<string, string | string[] | undefined>;
}
interface Response {
  setHeader(name: string, value: string): void;
}

function cookie(req: Request, name: string): string | undefined {
  const header = req.headers.cookie;
  for (const part of (typeof header === 'string' ? header : '').split(';')) {
    const at = part.indexOf('=');
    if (at > 0 && part.slice(0, at).trim() === name) {
      try {
        return decodeURIComponent(part.slice(at + 1).trim());
      } catch {
        return undefined;
      }
    }
  }
  return undefined;
}

/** `?key=` of a GET: the link that signs a browser in. */
function queryKey(req: Request): string | undefined {
  if (req.method !== 'GET' || !req.url?.includes('key=')) return undefined;
  return new URL(req.url, 'http://localhost').searchParams.get('key') ?? undefined;
}

/**
 * The demo's guard on its Weft routes (`/weft/*`, the dashboard, `/metrics`): the key `WEFT_API_KEY`
 * in the `x-api-key` header (scripts), or in the `weft_api_key` cookie (the dashboard in a
 * browser). `GET /weft?key=<key>` checks the key and sets the cookie: HttpOnly (page scripts cannot
 * read it) and SameSite=Strict (other sites' pages cannot send it, so they cannot post a cancel
 * with it). Unset (or empty), a random key is generated for this run and logged once, so
 * `npm start` works with no configuration while the routes are never open.
 */
@Injectable()
export class ApiKeyGuard implements CanActivate {
  private readonly expected: Buffer;

  constructor() {
    let key = process.env.WEFT_API_KEY;
    if (!key) {
      key = randomBytes(24).toString('base64url');
      new Logger('ApiKeyGuard').warn(`WEFT_API_KEY is not set; this run's key for /weft/* and /metrics: x-api-key: ${key}`);
    }
    this.expected = digest(key);
  }

  private matches(given: unknown): given is string {
    return typeof given === 'string' && timingSafeEqual(digest(given), this.expected);
  }

  canActivate(context: ExecutionContext): boolean {
    const http = context.switchToHttp();
    const req = http.getRequest<Request>();
    const header = req.headers['x-api-key'];
    // A header, when sent, decides alone: a stale cookie must not stand in for a wrong header.
    if (header !== undefined) {
      if (!this.matches(header)) throw new ApiKeyRejectedError();
      return true;
    }
    const fromQuery = queryKey(req);
    if (fromQuery !== undefined) {
      if (!this.matches(fromQuery)) throw new ApiKeyRejectedError();
      const secure = req.secure ? '; Secure' : '';
      http
        .getResponse<Response>()
        .setHeader('Set-Cookie', `${API_KEY_COOKIE}=${encodeURIComponent(fromQuery)}; Path=/; HttpOnly; SameSite=Strict${secure}`);
      return true;
    }
    if (!this.matches(cookie(req, API_KEY_COOKIE))) throw new ApiKeyRejectedError();
    return true;
  }
}
