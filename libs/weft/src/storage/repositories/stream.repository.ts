// weft_streams and weft_stream_entries: a workflow's streams (ctx.writeStream). Workflow code's
// entries are written by the advance statement that records them (advance-parts.ts, `streams`); a
// step body's are appended here, at once, at least once. Both take offsets from the stream's counter
// row, so they are dense from 0 per (workflow, key). Removed with the workflow by the foreign key.
import { StreamEntryEntity } from '../entities/stream.entity.js';
import { type SqlAccess, WeftRepository } from './weft-repository.js';
import type { WorkflowStatus } from '../../common/types.js';
import { qualify } from '../schema-name.js';
import { jsonParam } from '../sql-client.js';
import { notifyChannel } from './message.repository.js';
import { entryNoticeSql, type NoticeEntry } from '../talk-notice.js';
import { LIVE } from './workflow-purge.js';
import { Payloads } from '../payloads.js';

function statements(schema: string) {
  const streams = qualify(schema, 'weft_streams');
  const entries = qualify(schema, 'weft_stream_entries');
  const wf = qualify(schema, 'weft_workflows');
  return {
    /**
     * One entry of a live workflow's open stream, at the counter's next offset (the upsert waits for
     * and works on the counter's latest version), with its NOTIFY. `offset` null: closed or not live.
     */
    append: `
      WITH w AS (SELECT id FROM ${wf} WHERE id = $1 AND status IN (${LIVE})),
      h AS (
        INSERT INTO ${streams} AS s (workflow_id, key, next_offset, closed) SELECT w.id, $2, 1, false FROM w
        ON CONFLICT (workflow_id, key) DO UPDATE SET next_offset = s.next_offset + 1 WHERE NOT s.closed
        RETURNING s.workflow_id, s.key, s.next_offset - 1 AS o),
      e AS (
        INSERT INTO ${entries} (workflow_id, key, "offset", value, attempt, at)
        SELECT h.workflow_id, h.key, h.o, $3::json, $4, clock_timestamp() FROM h RETURNING workflow_id, key, "offset", value, attempt, at),
      n AS (SELECT count(pg_notify('${notifyChannel(schema)}', ${entryNoticeSql('workflow_id', 'key', '"offset"', 'attempt', 'at', 'value')})) AS n FROM e)
      SELECT (SELECT "offset" FROM e) AS "offset", (SELECT n FROM n) AS notified, EXISTS (SELECT 1 FROM w) AS live`,
    /** Entries from $3 (inclusive), at most $4, with the stream's close and the workflow's status. */
    read: `
      SELECT w.status, s.closed,
        COALESCE((SELECT json_agg(json_build_object('offset', e."offset", 'value', e.value, 'at', e.at, 'attempt', e.attempt) ORDER BY e."offset")
          FROM (SELECT * FROM ${entries} x WHERE x.workflow_id = $1 AND x.key = $2 AND x."offset" >= $3 ORDER BY x."offset" LIMIT $4) e), '[]') AS entries
      FROM ${wf} w LEFT JOIN ${streams} s ON s.workflow_id = w.id AND s.key = $2 WHERE w.id = $1`,
    /** A workflow's streams by key, at most $2, each with its entry count and close, and how many it has. */
    list: `
      SELECT key, next_offset AS entries, closed, count(*) OVER ()::int AS total
      FROM ${streams} WHERE workflow_id = $1 ORDER BY key LIMIT $2`,
  };
}

/** One stream entry as readStream yields it. */
export interface StreamEntryRow {
  offset: number;
  value: unknown;
  at: Date;
  /** The step attempt that wrote it; null from workflow code. */
  attempt: number | null;
}

/** weft_stream_entries (and the streams' counters). */
export class StreamRepository extends WeftRepository<StreamEntryEntity> {
  private readonly q: ReturnType<typeof statements>;

  /** @internal Built by the engine. */
  constructor(
    db: SqlAccess,
    schema: string,
    private readonly payloads: Payloads = new Payloads(),
  ) {
    super(db, StreamEntryEntity, 'weft_stream_entries');
    this.q = statements(schema);
  }

  /** A step body's entry; its offset, 'closed', or 'not-live' (the workflow ended or does not exist). */
  async append(workflowId: string, key: string, value: unknown, attempt: number): Promise<number | 'closed' | 'not-live'> {
    const [r] = await this.db.query<{ offset: number | null; live: boolean }>(this.q.append, [
      workflowId,
      key,
      jsonParam(await this.payloads.encode(value)),
      attempt,
    ]);
    if (!r.live) return 'not-live';
    return r.offset ?? 'closed';
  }

  /** A workflow's streams by key (the dashboard's Streams card): at most `limit`, and how many there are. */
  async list(
    workflowId: string,
    limit: number,
  ): Promise<{ streams: Array<{ key: string; entries: number; closed: boolean }>; total: number }> {
    const rows = await this.db.query<{ key: string; entries: number; closed: boolean; total: number }>(this.q.list, [workflowId, limit]);
    return { streams: rows.map(({ key, entries, closed }) => ({ key, entries, closed })), total: rows[0]?.total ?? 0 };
  }

  /** The entry a notice carried (storage/talk-notice.ts), as read() gives it. */
  async fromNotice(e: NoticeEntry): Promise<StreamEntryRow> {
    return { offset: e.offset, value: await this.payloads.decode(JSON.parse(e.value)), at: new Date(e.at), attempt: e.attempt };
  }

  /** Null when the workflow does not exist. */
  async read(
    workflowId: string,
    key: string,
    from: number,
    limit: number,
  ): Promise<{ status: WorkflowStatus; closed: boolean; entries: StreamEntryRow[] } | null> {
    type Row = { status: WorkflowStatus; closed: boolean | null; entries: Array<Omit<StreamEntryRow, 'at'> & { at: string }> };
    const [r] = await this.db.query<Row>(this.q.read, [workflowId, key, from, limit]);
    if (!r) return null;
    const entries = await Promise.all(
      r.entries.map(async (e) => ({ ...e, value: await this.payloads.decode(e.value), at: new Date(e.at) })),
    );
    return { status: r.status, closed: r.closed === true, entries };
  }
}
