import { Inject, Injectable, Logger, UnauthorizedException } from '@nestjs/common';
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { demoConfig, type DemoConfig } from './config/demo.config.js';

/** 401 with the same `{ statusCode, code, message }` body as Weft's own errors. */
export class ApiKeyRejectedError extends UnauthorizedException {
  readonly code = 'DEMO_API_KEY_REJECTED';
  constructor() {
    super({
      statusCode: 401,
      code: 'DEMO_API_KEY_REJECTED',
      message: 'Send the Weft API key in the x-api-key header; in a browser, sign in once at /weft/sign-in?key=<the key>.',
    });
  }
}

/** How long a browser stays signed in. */
export const SESSION_TTL_SECONDS = 12 * 60 * 60;

/** Equal-length digests, so neither the comparison time nor a length check tells anything about the key. */
const digest = (s: string) => createHash('sha256').update(s).digest();

/**
 * The demo's API key (`WEFT_API_KEY`, or one generated and logged once per process) and the
 * browser sessions derived from it. A session is `<expiry>.<HMAC-SHA256 of the expiry keyed by the
 * API key>`: it never reveals the key, expires by itself, and every demo process that shares the
 * key accepts it (cookies do not tell ports apart), with no session table. Changing the key ends
 * every session. See docs/operations.md#signing-a-browser-in.
 */
@Injectable()
export class ApiKey {
  private readonly key: string;
  private readonly expected: Buffer;

  constructor(@Inject(demoConfig.KEY) config: DemoConfig) {
    let key = config.apiKey;
    if (!key) {
      key = randomBytes(24).toString('base64url');
      new Logger('ApiKey').warn(`WEFT_API_KEY is not set; this run's key for /weft/* and /metrics: x-api-key: ${key}`);
    }
    this.key = key;
    this.expected = digest(key);
  }

  matches(given: unknown): given is string {
    return typeof given === 'string' && timingSafeEqual(digest(given), this.expected);
  }

  private mac(expiresAt: number): Buffer {
    return createHmac('sha256', this.key).update(`weft-demo-session:${expiresAt}`).digest();
  }

  /** A new session value, valid for SESSION_TTL_SECONDS from `nowMs`. */
  issueSession(nowMs = Date.now()): string {
    const expiresAt = Math.floor(nowMs / 1000) + SESSION_TTL_SECONDS;
    return `${expiresAt}.${this.mac(expiresAt).toString('base64url')}`;
  }

  /** Whether `value` is a session this key issued that has not expired. */
  validSession(value: unknown, nowMs = Date.now()): boolean {
    if (typeof value !== 'string') return false;
    const match = /^(\d{1,12})\.([\w-]{43})$/.exec(value);
    if (!match) return false;
    const expiresAt = Number(match[1]);
    if (expiresAt * 1000 <= nowMs) return false;
    return timingSafeEqual(Buffer.from(match[2], 'base64url'), this.mac(expiresAt));
  }
}
