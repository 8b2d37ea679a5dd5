import { InvalidConfigurationError } from '../errors';

const IDENTIFIER = /^[a-z_][a-z0-9_]{0,62}$/;

/** Schema names become part of SQL text, so only plain lower-case identifiers are accepted. */
export function validateSchemaName(schema: string): string {
  if (typeof schema !== 'string' || !IDENTIFIER.test(schema)) {
    throw new InvalidConfigurationError(
      'schema',
      `${JSON.stringify(schema)} is not a plain identifier; use lower-case letters, digits and underscores (max 63).`,
    );
  }
  return schema;
}

export function qualify(schema: string, table: string): string {
  return `"${schema}"."${table}"`;
}
