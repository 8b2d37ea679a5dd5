// Debounced starts (docs/queues.md, docs/decisions/0034). A debounced start is a `pending` workflow
// with a `debounce_key`, unique per type among pending workflows, and a delayed-start timer. A call
// inside the open window is one upsert that keeps the last input, pushes the start (and its timer)
// later, and bumps the version; the delayed-start fire commits only at the version it read and only
// once the start is due (Transitions.fireDelayedStart), so it never starts with an input a later
// call replaced. Once the window has closed (the start is due) no call changes the row: the call
// detaches it from the key (it starts with what it has) and opens a new window. The detach is the
// same upsert's conflict action, so it finds the row through the debounce index (the arbiter),
// with no plan to go astray (docs/decisions/0061).
import { WorkflowVersionConflictError } from '../../common/errors.js';
import { qualify } from '../schema-name.js';
import { jsonOrNullParam, type SqlClient } from '../sql-client.js';
import type { InboxMessage, InsertWorkflow, WorkflowRow } from '../types.js';
import { mapWorkflowRow } from './workflow.repository.js';
import { Payloads } from '../payloads.js';

const ms = `* interval '1 millisecond'`;
/** Calls that each met a closed window under the key: only windows that keep closing under their calls do this. */
const MAX_ATTEMPTS = 20;

function statements(schema: string) {
  const wf = qualify(schema, 'weft_workflows');
  const timers = qualify(schema, 'weft_timers');
  const msgs = qualify(schema, 'weft_messages');
  // $13: the workflow clock's offset (ms): times in the row and the timers are workflow time.
  const now = `(clock_timestamp() + $13::float8 ${ms})`;
  return {
    /**
     * $1 id, $2 type, $3 input, $4 trace context, $5 workflow version, $6 queue, $7 priority,
     * $8 partition key, $9 debounce key, $10 delay and $11 maxDelay (ms), $12 attributes, $13 offset, $14 headers.
     * Returns the window's workflow (new or pushed) and the ms to its start; or, when the window of
     * the pending workflow under the key had closed, that workflow `detached` from the key and
     * otherwise unchanged (its version too: its fire commits as it read it). One reading of the
     * clock decides which (`o.open`).
     */
    upsert: `
      WITH up AS (
        INSERT INTO ${wf} AS w (id, type, status, input, start_at, version, trace_context, workflow_version, queue, priority,
                                partition_key, debounce_key, debounce_until, attributes, headers)
        VALUES ($1::text, $2::text, 'pending', $3::json, ${now} + $10::float8 ${ms}, 1, $4::text, $5::text, $6::text,
                COALESCE($7::int, 0), $8::text, $9::text,
                CASE WHEN $11::float8 IS NULL THEN NULL ELSE ${now} + $11::float8 ${ms} END, $12::jsonb, $14::json)
        ON CONFLICT (type, debounce_key) WHERE debounce_key IS NOT NULL AND status = 'pending'
        DO UPDATE SET (input, headers, start_at, version, updated_at, debounce_key) = (
          SELECT CASE WHEN o.open THEN EXCLUDED.input ELSE w.input END, CASE WHEN o.open THEN EXCLUDED.headers ELSE w.headers END,
                 CASE WHEN o.open THEN LEAST(EXCLUDED.start_at, w.debounce_until) ELSE w.start_at END,
                 CASE WHEN o.open THEN w.version + 1 ELSE w.version END,
                 CASE WHEN o.open THEN clock_timestamp() ELSE w.updated_at END, CASE WHEN o.open THEN w.debounce_key END
          FROM (SELECT w.start_at > ${now} AS open) o)
        RETURNING w.id, w.start_at, (w.xmax = 0) AS inserted, w.debounce_key IS NULL AS detached
      ),
      tm AS (
        INSERT INTO ${timers} (workflow_id, kind, seq, fire_at) SELECT id, 'delayed-start', -1, start_at FROM up WHERE NOT detached
        ON CONFLICT (workflow_id, kind, seq) DO UPDATE SET fire_at = EXCLUDED.fire_at
      )
      SELECT id, inserted, detached, GREATEST(0, EXTRACT(EPOCH FROM (start_at - ${now})) * 1000)::float8 AS start_in_ms FROM up`,
    /**
     * The row a delayed-start fire decides on, with whether it is debounced and due by the database
     * clock, and what its start stored for the run it launches (docs/decisions/0046): the messages
     * sent while it waited too, whose notices found no run to wake.
     */
    forFire: `
      SELECT w.id, w.type, w.status, w.input, w.output, w.error, w.parent_id, w.run_number, w.deadline, w.start_at, w.created_at,
             w.updated_at, w.completed_at, w.version, w.workflow_version, w.queue, w.priority, w.admitted_at, w.attributes,
             w.headers, w.trace_context, w.debounce_key IS NOT NULL AS debounced,
             w.start_at <= (clock_timestamp() + $2::float8 ${ms}) AS due, w.singleton_wait IS NOT NULL AS waits,
             (SELECT json_agg(json_build_object('id', m.id::text, 'kind', m.kind, 'name', m.name, 'payload', m.payload) ORDER BY m.id)
              FROM ${msgs} m WHERE m.workflow_id = w.id AND m.consumed_seq IS NULL AND m.status = 'pending') AS inbox
      FROM ${wf} w WHERE w.id = $1`,
  };
}

/** A delayed start's row as its fire reads it (WorkflowDebounce.forFire). */
export interface FiringRow extends WorkflowRow {
  /** Its start's headers (decoded), or null. */
  headers: Record<string, string> | null;
  /** Its starter's traceparent, or null. */
  traceContext: string | null;
  /** Messages sent to it while it waited, unconsumed, in id order (decoded). */
  inbox: InboxMessage[];
  /** Committed only when due and at this version. */
  debounced: boolean;
  due: boolean;
  /** A singleton start queued behind its key's holder. */
  waits: boolean;
}

export class WorkflowDebounce {
  private readonly sql: ReturnType<typeof statements>;

  constructor(
    private readonly client: SqlClient,
    schema: string,
    private readonly clockOffset: () => number,
    private readonly payloads: Payloads = new Payloads(),
  ) {
    this.sql = statements(schema);
  }

  /** A debounced start: the window's workflow (`inserted` when this call opened it) and the ms to its start. */
  async start(w: InsertWorkflow): Promise<{ id: string; inserted: boolean; startInMs: number }> {
    const d = w.debounce!;
    const input = await this.payloads.encode(w.input);
    const headers = jsonOrNullParam(await this.payloads.encode(w.headers ?? null));
    for (let attempt = 0; ; attempt++) {
      const [r] = await this.client.query<{ id: string; inserted: boolean; detached: boolean; start_in_ms: number }>(this.sql.upsert, [
        w.id,
        w.type,
        jsonOrNullParam(input),
        w.traceContext ?? null,
        w.workflowVersion ?? null,
        w.queue ?? null,
        w.priority ?? null,
        w.partitionKey ?? null,
        d.key,
        d.delayMs,
        d.maxDelayMs,
        w.attributes ? JSON.stringify(w.attributes) : null,
        this.clockOffset(),
        headers,
      ]);
      if (!r.detached) return { id: r.id, inserted: r.inserted, startInMs: Number(r.start_in_ms) };
      // The window it met had closed and left the key: the next attempt opens a new one. Only
      // windows that keep closing under their calls (a delay of about nothing) get past this.
      if (attempt >= MAX_ATTEMPTS) throw new WorkflowVersionConflictError(w.id, 1);
    }
  }

  /**
   * A delayed start's row as its fire reads it: `debounced` rows commit only when `due` and at this
   * version; `waits`: a singleton start queued behind its key's holder (SingletonWaits).
   */
  async forFire(id: string): Promise<FiringRow | null> {
    const [r] = await this.client.query<Record<string, unknown>>(this.sql.forFire, [id, this.clockOffset()]);
    if (!r) return null;
    const row = await this.payloads.row(mapWorkflowRow(r));
    const launch = {
      headers: (r.headers as Record<string, string> | null) ?? null,
      traceContext: (r.trace_context as string | null) ?? null,
    };
    await this.payloads.headers(launch);
    const inbox = await this.payloads.inbox((r.inbox as InboxMessage[] | null) ?? []);
    return { ...row, ...launch, inbox, debounced: r.debounced as boolean, due: r.due as boolean, waits: r.waits as boolean };
  }
}
