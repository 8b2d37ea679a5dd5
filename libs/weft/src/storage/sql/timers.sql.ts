import { qualify } from '../schema-name';

export function timerSql(schema: string) {
  const timers = qualify(schema, 'weft_timers');
  return {
    /**
     * One query per tick: due timers, locked so concurrent pollers split them, and pushed
     * $2 ms into the future so a crash before the wake commits makes them fire again later.
     * The commit that consumes a timer deletes it.
     */
    takeDue: `
      WITH due AS (
        SELECT id, fire_at FROM ${timers} WHERE fire_at <= clock_timestamp()
        ORDER BY fire_at LIMIT $1 FOR UPDATE SKIP LOCKED
      )
      UPDATE ${timers} t SET fire_at = clock_timestamp() + $2 * interval '1 millisecond'
      FROM due WHERE t.id = due.id
      RETURNING t.id, t.workflow_id, t.kind, t.seq, due.fire_at`,
    nextFireAt: `SELECT min(fire_at) AS next FROM ${timers}`,
    forWorkflow: `SELECT id, kind, seq, fire_at FROM ${timers} WHERE workflow_id = $1 ORDER BY fire_at`,
  };
}
