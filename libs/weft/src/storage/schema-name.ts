import { InvalidConfigurationError } from '../common/errors.js';

/** PostgreSQL truncates (LISTEN) or refuses (pg_notify, error 22023) identifiers past 63 bytes. */
const MAX_IDENTIFIER_BYTES = 63;

/** Prefix of the longest identifier derived from the schema name: the NOTIFY channel. */
export const NOTIFY_CHANNEL_PREFIX = 'weft_';

/** Longest schema name whose derived identifiers all fit: 58 characters. */
export const MAX_SCHEMA_NAME_LENGTH = MAX_IDENTIFIER_BYTES - NOTIFY_CHANNEL_PREFIX.length;

const IDENTIFIER = /^[a-z_][a-z0-9_]*$/;

/** Schema names become part of SQL text, so only plain lower-case identifiers are accepted. */
export function validateSchemaName(schema: string): string {
  if (typeof schema !== 'string' || !IDENTIFIER.test(schema)) {
    throw new InvalidConfigurationError(
      'schema',
      `${JSON.stringify(schema)} is not a plain identifier; use lower-case letters, digits and underscores (max ${MAX_SCHEMA_NAME_LENGTH}).`,
    );
  }
  if (schema.length > MAX_SCHEMA_NAME_LENGTH) {
    throw new InvalidConfigurationError(
      'schema',
      `"${schema}" is ${schema.length} characters long; use at most ${MAX_SCHEMA_NAME_LENGTH}, so that the NOTIFY channel "${NOTIFY_CHANNEL_PREFIX}<schema>" fits PostgreSQL's ${MAX_IDENTIFIER_BYTES}-byte identifier limit.`,
    );
  }
  return schema;
}

export function qualify(schema: string, table: string): string {
  return `"${schema}"."${table}"`;
}
