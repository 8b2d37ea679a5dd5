import { ForbiddenException, HttpException, NotFoundException, UnauthorizedException } from '@nestjs/common';
import { EngineDisposedError, InvalidDurationError, WorkflowAlreadyStartedError, WorkflowNotFoundError } from '../../common/errors.js';
import * as cliErrors from '../../cli/errors.js';
import * as commonErrors from '../../common/errors.js';
import * as nestErrors from '../nest-errors.js';
import { toHttpError } from './http-errors.js';

/** Each error's status over HTTP: what it was when a list of codes said it; 500 for the rest. */
const STATUS_BY_CODE: Record<string, number> = {
  WEFT_INVALID_ARGUMENT: 400,
  WEFT_INVALID_DURATION: 400,
  WEFT_INVALID_WORKFLOW_ID: 400,
  WEFT_INVALID_CONFIGURATION: 400,
  WEFT_PAYLOAD_NOT_SERIALIZABLE: 400,
  WEFT_PAYLOAD_TOO_LARGE: 400,
  WEFT_QUEUE_NOT_DECLARED: 400,
  WEFT_TRANSACTION_DATABASE_MISMATCH: 400,
  WEFT_CROSS_ORIGIN_REFUSED: 403,
  WEFT_ROUTE_NOT_FOUND: 404,
  WEFT_REQUEST_TOO_LARGE: 413,
  WEFT_UNSUPPORTED_MEDIA_TYPE: 415,
  WEFT_WORKFLOW_NOT_FOUND: 404,
  WEFT_SCHEDULE_NOT_FOUND: 404,
  WEFT_DASHBOARD_ASSET_NOT_FOUND: 404,
  WEFT_WORKFLOW_TYPE_NOT_REGISTERED: 404,
  WEFT_UNKNOWN_HANDLER: 404,
  WEFT_WORKFLOW_ALREADY_STARTED: 409,
  WEFT_SCHEDULE_ALREADY_EXISTS: 409,
  WEFT_PURGE_REFUSED: 409,
  WEFT_FORK_REFUSED: 409,
  WEFT_WORKFLOW_NOT_RUNNING: 409,
  WEFT_STREAM_CLOSED: 409,
  WEFT_WORKFLOW_CLAIM_UNAVAILABLE: 409,
  WEFT_VERSION_CONFLICT: 409,
  WEFT_UPDATE_FAILED: 422,
  WEFT_UPDATE_REJECTED: 422,
  WEFT_QUERY_FAILED: 409,
  WEFT_SINGLETON_CONFLICT: 409,
  WEFT_STEP_ALREADY_COMPLETED: 409,
  WEFT_WORKFLOW_CANCELLED: 409,
  WEFT_DATABASE_UNAVAILABLE: 503,
  WEFT_ENGINE_DISPOSED: 503,
  WEFT_ENGINE_NOT_READY: 503,
  WEFT_ENGINE_DEPOSED: 503,
  WEFT_ENGINE_LEASE_NOT_HELD: 503,
  WEFT_CODEC_MISSING: 503,
  WEFT_UPDATE_TIMEOUT: 504,
};

describe('toHttpError', () => {
  it.each([
    [new InvalidDurationError('soon', 'startAfter'), 400],
    [new WorkflowNotFoundError('x'), 404],
    [new WorkflowAlreadyStartedError('x', 'running'), 409],
    [new EngineDisposedError(), 503],
  ])('maps %s by its class', (err, status) => {
    const out = toHttpError(err);
    expect(out.status).toBe(status);
    expect(out.body).toEqual({ statusCode: status, code: err.code, message: err.message });
  });

  it('maps every Weft error by its class: its category, or the status the class names', () => {
    const classes = [commonErrors, nestErrors, cliErrors].flatMap((mod) =>
      Object.values(mod).filter(
        (v): v is typeof commonErrors.WeftError => typeof v === 'function' && v.prototype instanceof commonErrors.WeftError,
      ),
    );
    const statuses = Object.fromEntries(
      classes.map((cls) => {
        const err = Object.assign(Object.create(cls.prototype) as commonErrors.WeftError, { message: 'm' });
        return [(cls as unknown as commonErrors.WeftErrorClass).code, toHttpError(err).status];
      }),
    );
    const changed = Object.entries(statuses).filter(([code, status]) => status !== (STATUS_BY_CODE[code] ?? 500));
    // Statuses no request sees: the embedded server fails at start-up, the result route answers a
    // timeout itself, the testing kit's clock is the tests', and the CLI's errors are the CLI's.
    expect(changed).toEqual([
      ['WEFT_EMBEDDED_DATABASE', 503],
      ['WEFT_RESULT_TIMEOUT', 504],
      ['WEFT_TEST_CLOCK_STUCK', 503],
      ['WEFT_CLI_USAGE', 400],
      ['WEFT_CLI_CONFIRMATION_REQUIRED', 400],
      ['WEFT_CLI_ABORTED', 400],
      ['WEFT_CLI_LEASE_MODE', 409],
      ['WEFT_SCHEMA_NOT_MIGRATED', 409],
    ]);
  });

  it("a refused fork carries the replayer's report, its error as name, code and message", () => {
    const error = new commonErrors.NonDeterminismError('wf', 0, { kind: 'step', name: 'reserve' }, { kind: 'step', name: 'reserve-v2' });
    const err = new commonErrors.ForkRefusedError('wf', 2, { workflowId: 'wf', type: 't', ok: false, error } as never);
    expect(toHttpError(err)).toEqual({
      status: 409,
      body: {
        statusCode: 409,
        code: 'WEFT_FORK_REFUSED',
        message: err.message,
        workflowId: 'wf',
        fromSeq: 2,
        report: {
          workflowId: 'wf',
          type: 't',
          ok: false,
          error: { name: 'NonDeterminismError', code: error.code, message: error.message },
        },
      },
      internal: false,
    });
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
