import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { ApiKey, ApiKeyRejectedError } from './api-key.js';

/** The cookie that carries a browser's session (never the key itself; see ApiKey). */
export const SESSION_COOKIE = 'weft_session';

export interface CookieRequest {
  headers: Record<string, string | string[] | undefined>;
}

export function cookie(req: CookieRequest, name: string): string | undefined {
  const header = req.headers.cookie;
  for (const part of (typeof header === 'string' ? header : '').split(';')) {
    const at = part.indexOf('=');
    if (at > 0 && part.slice(0, at).trim() === name) return part.slice(at + 1).trim();
  }
  return undefined;
}

/**
 * The demo's guard on its Weft routes (`/weft/*`, the dashboard, `/metrics`): the key `WEFT_API_KEY`
 * in the `x-api-key` header (scripts), or a session in the `weft_session` cookie (the dashboard in
 * a browser), which only `GET /weft/sign-in?key=<key>` (SignInController) sets. No other route
 * reads a key from the address.
 */
@Injectable()
export class ApiKeyGuard implements CanActivate {
  constructor(private readonly apiKey: ApiKey) {}

  canActivate(context: ExecutionContext): boolean {
    const req = context.switchToHttp().getRequest<CookieRequest>();
    const header = req.headers['x-api-key'];
    // A header, when sent, decides alone: a stale cookie must not stand in for a wrong header.
    if (header !== undefined) {
      if (!this.apiKey.matches(header)) throw new ApiKeyRejectedError();
      return true;
    }
    if (!this.apiKey.validSession(cookie(req, SESSION_COOKIE))) throw new ApiKeyRejectedError();
    return true;
  }
}
