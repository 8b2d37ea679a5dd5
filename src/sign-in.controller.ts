import { Controller, Get, Query, Req, Res } from '@nestjs/common';
import { ApiKey, ApiKeyRejectedError, SESSION_TTL_SECONDS } from './api-key.js';
import { SESSION_COOKIE } from './api-key.guard.js';

interface SignInRequest {
  secure?: boolean;
}
interface SignInResponse {
  setHeader(name: string, value: string): void;
  redirect(status: number, url: string): void;
}

/**
 * `GET /weft/sign-in?key=<WEFT_API_KEY>`: the one route that takes the key from the address. It
 * sets the session cookie and sends the browser on to the dashboard, so the key leaves the
 * address bar at once (docs/operations.md#signing-a-browser-in).
 */
@Controller('weft/sign-in')
export class SignInController {
  constructor(private readonly apiKey: ApiKey) {}

  @Get()
  signIn(@Query('key') key: unknown, @Req() req: SignInRequest, @Res() res: SignInResponse): void {
    if (!this.apiKey.matches(key)) throw new ApiKeyRejectedError();
    const secure = req.secure ? '; Secure' : '';
    res.setHeader(
      'Set-Cookie',
      `${SESSION_COOKIE}=${this.apiKey.issueSession()}; Path=/; Max-Age=${SESSION_TTL_SECONDS}; HttpOnly; SameSite=Strict${secure}`,
    );
    res.setHeader('Cache-Control', 'no-store');
    res.setHeader('Referrer-Policy', 'no-referrer');
    res.redirect(303, '/weft');
  }
}
