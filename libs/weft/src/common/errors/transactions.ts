// Transactional steps and the caller's transaction.
import { ErrorCategory, WeftError } from './base.js';

/** A ctx operation called inside a transactional step's body: one transaction cannot hold durable operations. */
export class OperationInTransactionError extends WeftError {
  static readonly code = 'WEFT_OPERATION_IN_TRANSACTION';
  static readonly category = ErrorCategory.Internal;
  constructor(readonly method: string) {
    super(
      `ctx.${method}() was called inside a transactional step's body. Its transaction commits with the step's one record, ` +
        'so it cannot hold durable operations of its own: call it from the workflow code, before or after the step.',
    );
  }
}

/**
 * A `manager` (or an ambient transaction) on another database than Weft's: its transaction
 * cannot commit Weft's rows. "Same database" is the same cluster (system identifier) and name.
 */
export class TransactionDatabaseMismatchError extends WeftError {
  static readonly code = 'WEFT_TRANSACTION_DATABASE_MISMATCH';
  static readonly category = ErrorCategory.Input;
  constructor(
    readonly operation: string,
    readonly given: { systemIdentifier: string; database: string },
    readonly weft: { systemIdentifier: string; database: string },
  ) {
    super(
      `${operation} was given a transaction on database "${given.database}" (system ${given.systemIdentifier}), but Weft runs on ` +
        `"${weft.database}" (system ${weft.systemIdentifier}). Transactional features need Weft and the application on one ` +
        "database: give WeftModule the application's DataSource (database: dataSource).",
    );
  }
}
