import { ArgumentsHost, Catch, ExceptionFilter, Logger } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { toHttpError } from './http-errors.js';

/** Scoped to Weft's own controllers: WeftError codes become 400/404/409/503 with `{ statusCode, code, message }`. */
@Catch()
export class WeftExceptionFilter implements ExceptionFilter {
  private readonly logger = new Logger('WeftHttp');

  constructor(private readonly adapterHost: HttpAdapterHost) {}

  catch(exception: unknown, host: ArgumentsHost): void {
    const { status, body, internal } = toHttpError(exception);
    if (internal) this.logger.error((exception as Error)?.stack ?? String(exception));
    this.adapterHost.httpAdapter.reply(host.switchToHttp().getResponse(), body, status);
  }
}
