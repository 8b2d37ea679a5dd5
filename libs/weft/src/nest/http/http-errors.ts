import { HttpException, HttpStatus } from '@nestjs/common';
import { WeftError } from '../../common/errors.js';

export interface HttpErrorBody {
  statusCode: number;
  code: string;
  message: string;
}

const STATUS_BY_CODE: Record<string, number> = {
  WEFT_INVALID_ARGUMENT: 400,
  WEFT_INVALID_DURATION: 400,
  WEFT_INVALID_WORKFLOW_ID: 400,
  WEFT_INVALID_CONFIGURATION: 400,
  WEFT_PAYLOAD_NOT_SERIALIZABLE: 400,
  WEFT_PAYLOAD_TOO_LARGE: 400,
  WEFT_QUEUE_NOT_DECLARED: 400,
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
  WEFT_WORKFLOW_NOT_RUNNING: 409,
  WEFT_WORKFLOW_CLAIM_UNAVAILABLE: 409,
  WEFT_VERSION_CONFLICT: 409,
  WEFT_UPDATE_FAILED: 422,
  WEFT_QUERY_FAILED: 409,
  WEFT_DATABASE_UNAVAILABLE: 503,
  WEFT_ENGINE_DISPOSED: 503,
  WEFT_ENGINE_NOT_READY: 503,
  WEFT_ENGINE_DEPOSED: 503,
  WEFT_ENGINE_LEASE_NOT_HELD: 503,
  WEFT_UPDATE_TIMEOUT: 504,
};

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

/** Status and body for an error thrown by the Weft HTTP API; `internal` marks the ones worth logging. */
export function toHttpError(err: unknown): { status: number; body: HttpErrorBody | object; internal: boolean } {
  if (err instanceof WeftError) {
    const status = STATUS_BY_CODE[err.code] ?? 500;
    return { status, body: { statusCode: status, code: err.code, message: err.message }, internal: status === 500 };
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
