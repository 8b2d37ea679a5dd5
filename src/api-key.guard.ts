import { CanActivate, ExecutionContext, Injectable, Logger, UnauthorizedException } from '@nestjs/common';
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/** 401 with the same `{ statusCode, code, message }` body as Weft's own errors. */
export class ApiKeyRejectedError extends UnauthorizedException {
  readonly code = 'DEMO_API_KEY_REJECTED';
  constructor() {
    super({ statusCode: 401, code: 'DEMO_API_KEY_REJECTED', message: 'Send the Weft API key in the x-api-key header.' });
  }
}

/** Equal-length digests, so neither the comparison time nor a length check tells anything about the key. */
const digest = (s: string) => createHash('sha256').update(s).digest();

/**
 * The demo's guard on its Weft routes (`/weft/*`, `/metrics`): header `x-api-key` must equal
 * `WEFT_API_KEY`. Unset (or empty), a random key is generated for this run and logged once, so
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

  canActivate(context: ExecutionContext): boolean {
    const given = context.switchToHttp().getRequest<{ headers: Record<string, string | string[] | undefined> }>().headers['x-api-key'];
    if (typeof given !== 'string' || !timingSafeEqual(digest(given), this.expected)) throw new ApiKeyRejectedError();
    return true;
  }
}
