import { HttpException, HttpStatus } from '@nestjs/common';
import { ErrorCategory, ForkRefusedError, WeftError, type WeftErrorClass } from '../../common/errors.js';

export interface HttpErrorBody {
  statusCode: number;
  code: string;
  message: string;
}

/** A Weft error's status follows from its category, unless its class names its own (413, 415...). */
const STATUS_BY_CATEGORY: Record<ErrorCategory, number> = {
  [ErrorCategory.Input]: HttpStatus.BAD_REQUEST,
  [ErrorCategory.Conflict]: HttpStatus.CONFLICT,
  [ErrorCategory.NotFound]: HttpStatus.NOT_FOUND,
  [ErrorCategory.Unavailable]: HttpStatus.SERVICE_UNAVAILABLE,
  [ErrorCategory.Internal]: HttpStatus.INTERNAL_SERVER_ERROR,
};

function statusOf(err: WeftError): number {
  return (err.constructor as unknown as WeftErrorClass).httpStatus ?? STATUS_BY_CATEGORY[err.category];
}

// pg: class 08 = connection exception; 57P01-3 = shutdown / cannot connect now; 53300 = too many connections.
const PG_UNAVAILABLE = /^(08...|57P0[123]|53300)$/;
const NODE_UNAVAILABLE = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENOTFOUND', 'EPIPE']);
const MESSAGE_UNAVAILABLE =
  /Connection terminated|timeout exceeded when trying to connect|not currently accepting connections|does not allow connections/i;

export function isDatabaseUnavailable(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown } | null;
  const code = typeof e?.code === 'string' ? e.code : '';
  const message = typeof e?.message === 'string' ? e.message : '';
  return PG_UNAVAILABLE.test(code) || NODE_UNAVAILABLE.has(code) || MESSAGE_UNAVAILABLE.test(message);
}

/**
 * The body of a Nest HttpException (a guard's 401 or 403, a pipe's 400) as thrown, with
 * `code: 'WEFT_HTTP_<status>'` added when it has none: every refusal over HTTP carries a code.
 */
function withCode(err: HttpException): object {
  const status = err.getStatus();
  const response = err.getResponse();
  const body = typeof response === 'object' && response !== null ? response : { statusCode: status, message: String(response) };
  return typeof (body as { code?: unknown }).code === 'string' ? body : { ...body, code: `WEFT_HTTP_${status}` };
}

/** What an operator needs beyond the message: a refused fork's replay report (its error as name, code and message). */
function detailsOf(err: WeftError): object {
  if (!(err instanceof ForkRefusedError) || !err.report) return {};
  const e = err.report.error as { name?: string; code?: string; message: string };
  const report = { ...err.report, error: { name: e.name, code: e.code, message: e.message } };
  return { workflowId: err.workflowId, fromSeq: err.fromSeq, report };
}

/** Status and body for an error thrown by the Weft HTTP API; `internal` marks the ones worth logging. */
export function toHttpError(err: unknown): { status: number; body: HttpErrorBody | object; internal: boolean } {
  if (err instanceof WeftError) {
    const status = statusOf(err);
    const body = { statusCode: status, code: err.code, message: err.message, ...detailsOf(err) };
    return { status, body, internal: status === 500 };
  }
  if (err instanceof HttpException) return { status: err.getStatus(), body: withCode(err), internal: false };
  if (isDatabaseUnavailable(err)) {
    const status = HttpStatus.SERVICE_UNAVAILABLE;
    return {
      status,
      body: { statusCode: status, code: 'WEFT_DATABASE_UNAVAILABLE', message: 'The database is unavailable; retry later.' },
      internal: false,
    };
  }
  const status = HttpStatus.INTERNAL_SERVER_ERROR;
  return { status, body: { statusCode: status, code: 'WEFT_INTERNAL_ERROR', message: 'Internal server error' }, internal: true };
}
