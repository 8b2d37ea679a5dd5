// The CLI's own errors: only the `weft` bin throws them. Usage ones map to exit code 2 (run.ts).
import { ErrorCategory, WeftError } from '../common/errors.js';

/** The `weft` CLI was called wrongly: unknown command or option, missing or malformed argument (exit code 2). */
export class CliUsageError extends WeftError {
  static readonly code = 'WEFT_CLI_USAGE';
  static readonly category = ErrorCategory.Input;
  constructor(detail: string) {
    super(`${detail}. Run "weft --help" or "weft <command> --help" for usage.`);
  }
}

/** A bulk CLI command needs confirmation, and stdin is not a terminal to ask on (exit code 2). */
export class CliConfirmationRequiredError extends WeftError {
  static readonly code = 'WEFT_CLI_CONFIRMATION_REQUIRED';
  static readonly category = ErrorCategory.Input;
  constructor(
    readonly action: string,
    readonly count: number,
  ) {
    super(`Refusing to ${action} ${count} workflow(s) without confirmation: stdin is not a terminal. Re-run with --yes to confirm.`);
  }
}

/** The operator answered no to a CLI confirmation prompt; nothing was changed. */
export class CliAbortedError extends WeftError {
  static readonly code = 'WEFT_CLI_ABORTED';
  static readonly category = ErrorCategory.Input;
  constructor(readonly action: string) {
    super(`Not confirmed: nothing was done (${action}). Answer "y" to the prompt, or pass --yes.`);
  }
}

/**
 * Under ownership 'lease' only the lease holder writes transitions; the CLI will not contend for
 * the global lease, so cancel, suspend and resume go through the holder's HTTP API instead.
 */
export class CliLeaseModeError extends WeftError {
  static readonly code = 'WEFT_CLI_LEASE_MODE';
  static readonly category = ErrorCategory.Conflict;
  constructor(
    readonly command: string,
    readonly holder: string | null,
    /** What the command writes, and the HTTP API's route segment for it. */
    readonly target: 'workflows' | 'schedules' = 'workflows',
  ) {
    super(
      `This database runs ownership 'lease': only the engine holding the global lease (${holder ?? 'none right now'}) may ${command} ${target}, ` +
        `and the CLI does not take the lease. Use that engine's HTTP API instead (POST <prefix>/${target}/<id>/${command}).`,
    );
  }
}

/** The schema has no Weft tables, or is at an older migration than this package (the CLI never migrates). */
export class SchemaNotMigratedError extends WeftError {
  static readonly code = 'WEFT_SCHEMA_NOT_MIGRATED';
  static readonly category = ErrorCategory.Conflict;
  constructor(
    readonly schema: string,
    /** Migrations this package knows that the schema has not applied; every one when it has no Weft tables. */
    readonly pending: string[],
    readonly missing: boolean,
  ) {
    super(
      missing
        ? `Schema "${schema}" has no Weft tables. Check --schema and --database-url (DATABASE_URL); engines create the tables when they first start.`
        : `Schema "${schema}" is behind this version of Weft (${pending.length} migration(s) pending: ${pending.join(', ')}). ` +
            `Start an engine of this version (it migrates on start), or use the CLI of the version your engines run.`,
    );
  }
}
