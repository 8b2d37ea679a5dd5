import type { DataSource } from 'typeorm';

export interface WeftUrlDatabase {
  url: string;
  /** Pool size of the DataSource Weft creates (default 10). */
  poolSize?: number;
}

/** `{ url }`, an existing TypeORM DataSource, or undefined for the embedded server. */
export type WeftDatabaseOption = WeftUrlDatabase | DataSource | undefined;

/** Options shared by the plain engine and WeftModule (docs/api.md). */
export interface WeftOptions {
  /** `{ url }`, an existing TypeORM DataSource, or absent for the embedded PostgreSQL. */
  database?: WeftDatabaseOption;
  /** Schema for Weft's tables, created if absent (default 'public'). */
  schema?: string;
  /** Identifies this engine in claims and logs (default: a random UUID per process). */
  engineId?: string;
}
