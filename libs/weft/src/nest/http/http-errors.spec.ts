import { ForbiddenException, HttpException, NotFoundException, UnauthorizedException } from '@nestjs/common';
import { EngineDisposedError, InvalidDurationError, WorkflowAlreadyStartedError, WorkflowNotFoundError } from '../../common/errors.js';
import { toHttpError } from './http-errors.js';

describe('toHttpError', () => {
  it.each([
    [new InvalidDurationError('soon', 'startAfter'), 400],
    [new WorkflowNotFoundError('x'), 404],
    [new WorkflowAlreadyStartedError('x', 'running'), 409],
    [new EngineDisposedError(), 503],
  ])('maps %s by its code', (err, status) => {
    const out = toHttpError(err);
    expect(out.status).toBe(status);
    expect(out.body).toEqual({ statusCode: status, code: err.code, message: err.message });
  });

  it('maps lost database connections to 503 without their details', () => {
    for (const err of [
      Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' }),
      Object.assign(new Error('connect ECONNREFUSED 10.0.0.1:5432'), { code: 'ECONNREFUSED' }),
      new Error('Connection terminated unexpectedly'),
    ]) {
      expect(toHttpError(err)).toEqual({
        status: 503,
        body: { statusCode: 503, code: 'WEFT_DATABASE_UNAVAILABLE', message: expect.not.stringContaining('10.0.0.1') },
        internal: false,
      });
    }
  });

  it('keeps Nest HTTP exceptions, adding a code when they have none, and hides anything else behind a 500', () => {
    expect(toHttpError(new NotFoundException('nope'))).toEqual({
      status: 404,
      body: { statusCode: 404, error: 'Not Found', message: 'nope', code: 'WEFT_HTTP_404' },
      internal: false,
    });
    expect(toHttpError(new ForbiddenException()).body).toMatchObject({ statusCode: 403, code: 'WEFT_HTTP_403' });
    expect(toHttpError(new HttpException('slow down', 429)).body).toEqual({ statusCode: 429, code: 'WEFT_HTTP_429', message: 'slow down' });
    expect(toHttpError(new UnauthorizedException({ message: 'no key', code: 'APP_NO_KEY' })).body).toEqual({
      message: 'no key',
      code: 'APP_NO_KEY',
    });
    expect(toHttpError(new TypeError('x is undefined'))).toEqual({
      status: 500,
      body: { statusCode: 500, code: 'WEFT_INTERNAL_ERROR', message: 'Internal server error' },
      internal: true,
    });
  });
});
