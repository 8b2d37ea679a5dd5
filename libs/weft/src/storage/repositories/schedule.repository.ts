// weft_schedules: schedule definitions and their firing state. No statement here holds a row lock
// while the caller starts workflows (a start needs a pooled connection of its own): a pass reads
// the due rows, starts their fires, and records them with a compare-and-swap on `version`. The
// workflow id of each fire is deterministic, so engines racing over one schedule, or a pass
// repeated after a crash, start nothing twice; the swap keeps one pass's record.
import type { ClockOffset } from '../../common/clock.js';
import { ScheduleEntity } from '../entities/schedule.entity.js';
import { workflowNow } from './timer.repository.js';
import { qualify } from '../schema-name.js';
import { jsonParam } from '../sql-client.js';
import { type SqlAccess, WeftRepository } from './weft-repository.js';
import { Payloads } from '../payloads.js';

const COLUMNS = `id, workflow_type, cron, every_ms::float8 AS every_ms, timezone, input, overlap,
  catchup_window_ms::float8 AS catchup_window_ms, paused, source, next_fire_at, buffered_fire_at,
  last_workflow_id, recent_runs, pending_triggers, created_at, updated_at, version`;
/** A bound on the triggers waiting for an engine that runs the type. */
export const MAX_PENDING_TRIGGERS = 100;
/** The recent runs a schedule keeps. */
export const RECENT_RUNS = 10;

/**
 * Due: its next fire time has come on the workflow clock (parameter `offset`: common/clock.ts) or a
 * buffered fire waits (unless paused), or a trigger waits.
 */
const due = (offset: string) => `((NOT paused AND (next_fire_at <= ${workflowNow(offset)} OR buffered_fire_at IS NOT NULL))
             OR json_array_length(pending_triggers) > 0)`;

function statements(schema: string) {
  const t = qualify(schema, 'weft_schedules');
  return {
    insert: `INSERT INTO ${t} (id, workflow_type, cron, every_ms, timezone, input, overlap, catchup_window_ms, paused, source, next_fire_at)
             VALUES ($1, $2, $3, $4, $5, $6::json, $7, $8, $9, $10, $11)
             ON CONFLICT (id) DO NOTHING RETURNING id`,
    /**
     * A decorator's schedule at bootstrap: created, or brought in step with the code. Replicas
     * booting together race here; ON CONFLICT makes them one row, and an unchanged definition is
     * not rewritten. The fire times move only when the rule changed; pause state stays.
     */
    ensure: `INSERT INTO ${t} AS s (id, workflow_type, cron, every_ms, timezone, input, overlap, catchup_window_ms, source, next_fire_at)
             VALUES ($1, $2, $3, $4, $5, $6::json, $7, $8, 'decorator', $9)
             ON CONFLICT (id) DO UPDATE SET
               workflow_type = EXCLUDED.workflow_type, cron = EXCLUDED.cron, every_ms = EXCLUDED.every_ms,
               timezone = EXCLUDED.timezone, input = EXCLUDED.input, overlap = EXCLUDED.overlap,
               catchup_window_ms = EXCLUDED.catchup_window_ms, source = 'decorator',
               next_fire_at = CASE WHEN (s.cron, s.every_ms, s.timezone) IS DISTINCT FROM (EXCLUDED.cron, EXCLUDED.every_ms, EXCLUDED.timezone)
                                   THEN EXCLUDED.next_fire_at ELSE s.next_fire_at END,
               updated_at = now(), version = s.version + 1
             WHERE (s.workflow_type, s.cron, s.every_ms, s.timezone, s.input::text, s.overlap, s.catchup_window_ms, s.source)
                   IS DISTINCT FROM (EXCLUDED.workflow_type, EXCLUDED.cron, EXCLUDED.every_ms, EXCLUDED.timezone,
                                     EXCLUDED.input::text, EXCLUDED.overlap, EXCLUDED.catchup_window_ms, 'decorator')`,
    /**
     * Declared schedules of the types this engine runs that its code no longer declares: paused,
     * not deleted (their history stays, and an operator may unpause one to keep it).
     */
    pauseUndeclared: `UPDATE ${t} SET paused = true, buffered_fire_at = NULL, updated_at = now(), version = version + 1
             WHERE source = 'decorator' AND NOT paused AND workflow_type = ANY($1::varchar[]) AND NOT (id = ANY($2::varchar[]))
             RETURNING id, workflow_type`,
    get: `SELECT ${COLUMNS} FROM ${t} WHERE id = $1`,
    list: `SELECT ${COLUMNS} FROM ${t} WHERE id > $1 ORDER BY id LIMIT $2`,
    /** A definition change (compare-and-swap on version). */
    update: `UPDATE ${t} SET workflow_type = $3, cron = $4, every_ms = $5, timezone = $6, input = $7::json, overlap = $8,
               catchup_window_ms = $9, paused = $10, next_fire_at = $11, buffered_fire_at = $12,
               updated_at = now(), version = version + 1
             WHERE id = $1 AND version = $2`,
    delete: `DELETE FROM ${t} WHERE id = $1`,
    now: `SELECT ${workflowNow('$1')} AS now`,
    /** The earliest fire of an unpaused schedule, on workflow time (the testing kit's clock skips to it). */
    nextFireAt: `SELECT min(next_fire_at) AS at FROM ${t} WHERE NOT paused AND next_fire_at > $1`,
    /** Whether a pass has anything to do: one statement on the idle tick. */
    anyDue: `SELECT EXISTS (SELECT 1 FROM ${t} WHERE ${due('$2')} AND workflow_type = ANY($1::varchar[])) AS due`,
    /** Due schedules of the types this engine runs (a paused one only for its pending triggers). */
    due: `SELECT ${COLUMNS}, ${workflowNow('$3')} AS db_now FROM ${t}
          WHERE ${due('$3')} AND workflow_type = ANY($1::varchar[])
          ORDER BY next_fire_at LIMIT $2`,
    /** A pass's record, if no one changed the row since the pass read it. Its pending triggers were handled. */
    fired: `UPDATE ${t} SET next_fire_at = $3, buffered_fire_at = $4, last_workflow_id = $5, recent_runs = $6::json,
              pending_triggers = '[]', updated_at = now(), version = version + 1
            WHERE id = $1 AND version = $2 RETURNING id`,
    /**
     * A trigger's run, prepended to the recent runs in one statement (no read-modify-write to
     * race with); with $4, its fire time is also left for an engine that runs the type.
     */
    triggered: `UPDATE ${t} SET last_workflow_id = $2,
              recent_runs = (SELECT COALESCE(json_agg(r.e ORDER BY r.i), '[]'::json)
                             FROM (SELECT e, i FROM jsonb_array_elements(jsonb_build_array($3::jsonb) || recent_runs::jsonb)
                                   WITH ORDINALITY AS a(e, i) ORDER BY i LIMIT ${RECENT_RUNS}) r),
              pending_triggers = CASE WHEN $4::text IS NULL THEN pending_triggers
                                      ELSE (pending_triggers::jsonb || jsonb_build_array($4::text))::json END,
              updated_at = now(), version = version + 1
            WHERE id = $1 AND ($4::text IS NULL OR json_array_length(pending_triggers) < ${MAX_PENDING_TRIGGERS})
            RETURNING id`,
  };
}

export interface ScheduleRecentRun {
  fireAt: string;
  workflowId: string;
  outcome: string;
}

/** What a schedule's definition writes: every column a create or an update sets. */
export interface ScheduleDefinition {
  id: string;
  workflowType: string;
  cron: string | null;
  everyMs: number | null;
  timezone: string | null;
  input: unknown;
  overlap: string;
  catchupWindowMs: number | null;
  nextFireAt: Date;
}

/** A stored schedule: its definition and its firing state. */
export interface ScheduleRow extends ScheduleDefinition {
  paused: boolean;
  source: 'decorator' | 'api';
  bufferedFireAt: Date | null;
  lastWorkflowId: string | null;
  recentRuns: ScheduleRecentRun[];
  /** Fire times (ISO) of triggers made on engines that do not run the type, oldest first. */
  pendingTriggers: string[];
  createdAt: Date;
  updatedAt: Date;
  version: number;
}

function toRow(r: Record<string, unknown>): ScheduleRow {
  return {
    id: r.id as string,
    workflowType: r.workflow_type as string,
    cron: (r.cron as string | null) ?? null,
    everyMs: (r.every_ms as number | null) ?? null,
    timezone: (r.timezone as string | null) ?? null,
    input: r.input ?? null,
    overlap: r.overlap as string,
    catchupWindowMs: (r.catchup_window_ms as number | null) ?? null,
    paused: r.paused as boolean,
    source: r.source as 'decorator' | 'api',
    nextFireAt: r.next_fire_at as Date,
    bufferedFireAt: (r.buffered_fire_at as Date | null) ?? null,
    lastWorkflowId: (r.last_workflow_id as string | null) ?? null,
    recentRuns: (r.recent_runs as ScheduleRecentRun[]) ?? [],
    pendingTriggers: (r.pending_triggers as string[]) ?? [],
    createdAt: r.created_at as Date,
    updatedAt: r.updated_at as Date,
    version: r.version as number,
  };
}

const definitionParams = (d: ScheduleDefinition) => [
  d.id,
  d.workflowType,
  d.cron,
  d.everyMs,
  d.timezone,
  jsonParam(d.input ?? null),
  d.overlap,
  d.catchupWindowMs,
];

export class ScheduleRepository extends WeftRepository<ScheduleEntity> {
  private readonly q: ReturnType<typeof statements>;

  constructor(
    db: SqlAccess,
    schema: string,
    private readonly clockOffset: ClockOffset = () => 0,
    private readonly payloads: Payloads = new Payloads(),
  ) {
    super(db, ScheduleEntity, 'weft_schedules');
    this.q = statements(schema);
  }

  /**
   * A definition with its input encoded. `ensure` (a decorator's schedule) keeps its input plain:
   * it is in the code, and an encoded one would differ at every boot, so the unchanged definition
   * would be rewritten each time.
   */
  private async encoded<D extends ScheduleDefinition>(d: D): Promise<D> {
    return this.payloads.active ? { ...d, input: await this.payloads.encode(d.input) } : d;
  }

  private async decoded(r: ScheduleRow): Promise<ScheduleRow> {
    r.input = await this.payloads.decode(r.input);
    return r;
  }

  /** @internal False when the id is taken. */
  async add(d: ScheduleDefinition, paused: boolean): Promise<boolean> {
    const rows = await this.db.query(this.q.insert, [...definitionParams(await this.encoded(d)), paused, 'api', d.nextFireAt]);
    return rows.length === 1;
  }

  /** @internal */
  async ensure(d: ScheduleDefinition): Promise<void> {
    await this.db.query(this.q.ensure, [...definitionParams(d), d.nextFireAt]);
  }

  /** @internal Pauses the declared schedules of `types` whose ids are not in `declared`; returns them. */
  async pauseUndeclared(types: string[], declared: string[]): Promise<Array<{ id: string; workflowType: string }>> {
    const rows = await this.db.query<{ id: string; workflow_type: string }>(this.q.pauseUndeclared, [types, declared]);
    return rows.map((r) => ({ id: r.id, workflowType: r.workflow_type }));
  }

  async get(id: string): Promise<ScheduleRow | null> {
    const [r] = await this.db.query<Record<string, unknown>>(this.q.get, [id]);
    return r ? this.decoded(toRow(r)) : null;
  }

  /** Ordered by id, after `after` (exclusive). */
  async listPage(after: string, limit: number): Promise<ScheduleRow[]> {
    return Promise.all((await this.db.query<Record<string, unknown>>(this.q.list, [after, limit])).map((r) => this.decoded(toRow(r))));
  }

  /** @internal Compare-and-swap on `expectedVersion`; false when the row moved or is gone. */
  async change(d: ScheduleDefinition & { paused: boolean; bufferedFireAt: Date | null }, expectedVersion: number): Promise<boolean> {
    const [id, ...def] = definitionParams(await this.encoded(d));
    const rows = await this.db.query<{ id: string }>(`${this.q.update} RETURNING id`, [
      id,
      expectedVersion,
      ...def,
      d.paused,
      d.nextFireAt,
      d.bufferedFireAt,
    ]);
    return rows.length === 1;
  }

  /** @internal True when a row was deleted. */
  async drop(id: string): Promise<boolean> {
    return (await this.db.query<{ id: string }>(`${this.q.delete} RETURNING id`, [id])).length === 1;
  }

  /**
   * @internal The database clock on workflow time (plus the workflow clock's offset): fire times are
   * judged by it, never by an engine's own clock.
   */
  async now(): Promise<Date> {
    const [r] = await this.db.query<{ now: Date }>(this.q.now, [this.clockOffset()]);
    return r.now;
  }

  /** @internal The earliest fire of an unpaused schedule after `after`, or null. */
  async nextFireAt(after: Date): Promise<Date | null> {
    const [r] = await this.db.query<{ at: Date | null }>(this.q.nextFireAt, [after]);
    return r?.at ?? null;
  }

  /** @internal */
  async anyDue(types: string[]): Promise<boolean> {
    const [r] = await this.db.query<{ due: boolean }>(this.q.anyDue, [types, this.clockOffset()]);
    return r.due;
  }

  /** @internal Due schedules of `types`, with the database's clock on workflow time; nothing is locked. */
  async dueRows(types: string[], limit: number): Promise<Array<{ row: ScheduleRow; dbNow: Date }>> {
    const rows = await this.db.query<Record<string, unknown>>(this.q.due, [types, limit, this.clockOffset()]);
    return Promise.all(rows.map(async (r) => ({ row: await this.decoded(toRow(r)), dbNow: r.db_now as Date })));
  }

  /** @internal Records a pass's fires, compare-and-swap on `version`; false when the row moved or is gone. */
  async recordFires(
    id: string,
    version: number,
    state: { nextFireAt: Date; bufferedFireAt: Date | null; lastWorkflowId: string | null; recentRuns: ScheduleRecentRun[] },
  ): Promise<boolean> {
    const rows = await this.db.query(this.q.fired, [
      id,
      version,
      state.nextFireAt,
      state.bufferedFireAt,
      state.lastWorkflowId,
      jsonParam(state.recentRuns),
    ]);
    return rows.length === 1;
  }

  /**
   * @internal Records a trigger's run; `pending`: its fire time is left for an engine that runs the
   * type. False when the schedule is gone, or (pending) already has MAX_PENDING_TRIGGERS waiting.
   */
  async recordTrigger(id: string, run: ScheduleRecentRun, pending: boolean): Promise<boolean> {
    const rows = await this.db.query(this.q.triggered, [id, run.workflowId, JSON.stringify(run), pending ? run.fireAt : null]);
    return rows.length === 1;
  }
}
