import { qualify } from '../schema-name.js';

export function operationSql(schema: string) {
  const ops = qualify(schema, 'weft_operations');
  return {
    history: `SELECT seq, kind, name, status, result, error, attempts, started_at, completed_at, event
              FROM ${ops} WHERE workflow_id = $1 ORDER BY seq`,
  };
}
