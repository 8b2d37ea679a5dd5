// What every Weft error is: its category, the class shape, the base class, and an error rebuilt from a history.
/**
 * Whose fault an error is and what helps. The engine and the HTTP layer read it from the class
 * (the HTTP status follows from it), never from a list of codes.
 */
export const ErrorCategory = {
  /** The caller of the operation gave something wrong (argument, payload, option): retrying the same fails the same. */
  Input: 'input',
  /** What it acts on is in a state that refuses it (exists already, not running, claimed elsewhere). */
  Conflict: 'conflict',
  /** What it names does not exist (workflow, schedule, type, handler, route). */
  NotFound: 'not-found',
  /** Weft or its database cannot serve it now (disposed, lease not held, database away, timed out): retry later. */
  Unavailable: 'unavailable',
  /** On the server's side: a bug, or the app's own code, declarations or setup; read the logs. */
  Internal: 'internal',
} as const;
export type ErrorCategory = (typeof ErrorCategory)[keyof typeof ErrorCategory];

/** What every error class declares, statically: one place per error. */
export interface WeftErrorClass {
  /** Stable across releases; unique. */
  readonly code: string;
  readonly category: ErrorCategory;
  /** The HTTP status when it is not its category's (413, 415...). */
  readonly httpStatus?: number;
}

/** Base of every error Weft shows to users; `code` and `category` are declared on each class. */
export abstract class WeftError extends Error {
  /** The class's stable code, as an own field: histories record it with the error. */
  readonly code: string;
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
    this.code = (new.target as unknown as WeftErrorClass).code;
  }

  /** The class's category (a getter, so recorded errors do not carry it). */
  get category(): ErrorCategory {
    return (this.constructor as unknown as WeftErrorClass).category ?? ErrorCategory.Internal;
  }
}

/** An error rebuilt from a history: its recorded `code` and `details` (and short own fields) are on it. */
export interface RecordedError extends Error {
  code?: string | number;
  details?: unknown;
}
