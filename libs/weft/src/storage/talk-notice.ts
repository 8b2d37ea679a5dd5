// The NOTIFY payload forms of "a workflow published an event or a stream entry": on the schema's
// one channel (a second channel's name would not fit 63 bytes for the longest schema name), told
// apart from a message's payload (a bare workflow id) by a leading U+0001 or U+0002, which no
// workflow id holds (engine/validation.ts refuses control characters in ids).
//   \x01<workflow id>\x01<key>                   something was written: readers read it
//   \x02<workflow id>\x01<value json>\x01<key>   an event's value as stored (codec-encoded when a
//                                                codec is set): its getEvent waiters need no read
//   \x03<workflow id>\x01<offset>\x01<attempt>\x01<at>\x01<value json>\x01<key>
//                                                a stream's one entry of that statement (attempt
//                                                empty from workflow code): a reader at that
//                                                offset yields it before its next read
//   \x04<queue>\x01<engine id>                   a queued run's end on that engine freed a slot of the
//                                                queue while work was left: the others admit now
//                                                (docs/decisions/0042)
// The value sits before the key because a key may hold U+0001 and JSON text never does (PostgreSQL
// refuses an unescaped control character in json). A value longer than NOTICE_VALUE_BYTES goes in
// the first form: a payload must stay under 8000 bytes, and an id and a key take up to 1020 each.
const MARK = '\u0001';
const WITH_VALUE = '\u0002';
const WITH_ENTRY = '\u0003';
const QUEUE_FREED = '\u0004';

/** The largest event value (bytes of its stored JSON text) a notice carries. */
export const NOTICE_VALUE_BYTES = 4000;

/** The payload as SQL, from a workflow id and a key expression. */
export const talkNoticeSql = (workflowId: string, key: string): string => `chr(1) || ${workflowId} || chr(1) || ${key}`;

/** An event's payload as SQL: with its stored value when that is short enough. */
export const eventNoticeSql = (workflowId: string, key: string, value: string): string =>
  `CASE WHEN octet_length(${value}::text) <= ${NOTICE_VALUE_BYTES} THEN chr(2) || ${workflowId} || chr(1) || ${value}::text || chr(1) || ${key}
    ELSE ${talkNoticeSql(workflowId, key)} END`;

/** A stream entry's payload as SQL: with the entry when its stored value is short enough. */
export const entryNoticeSql = (workflowId: string, key: string, offset: string, attempt: string, at: string, value: string): string =>
  `CASE WHEN octet_length(${value}::text) <= ${NOTICE_VALUE_BYTES} THEN chr(3) || ${workflowId} || chr(1) || ${offset} || chr(1) ||
    COALESCE(${attempt}::text, '') || chr(1) || (to_json(${at}) #>> '{}') || chr(1) || ${value}::text || chr(1) || ${key}
    ELSE ${talkNoticeSql(workflowId, key)} END`;

/** A freed queue slot's payload as SQL, from a queue name and the engine id that freed it. */
export const queueNoticeSql = (queue: string, engineId: string): string => `chr(4) || ${queue} || chr(1) || ${engineId}`;

/** The queue and engine of a freed slot's notice, or null for any other payload. */
export function parseQueueNotice(payload: string): { queue: string; engineId: string } | null {
  if (payload[0] !== QUEUE_FREED) return null;
  const at = payload.indexOf(MARK, 1);
  return at < 0 ? null : { queue: payload.slice(1, at), engineId: payload.slice(at + 1) };
}

/** A stream entry a notice carried: its stored value as JSON text, `at` as PostgreSQL wrote it. */
export interface NoticeEntry {
  offset: number;
  attempt: number | null;
  at: string;
  value: string;
}

/** What a notice says: the workflow and key, and the event value (stored JSON text) or the entry it carries. */
export interface TalkNotice {
  workflowId: string;
  key: string;
  event?: string;
  entry?: NoticeEntry;
}

/** The notice a payload is, or null for a message's payload (a bare workflow id). */
export function parseTalkNotice(payload: string): TalkNotice | null {
  const form = payload[0];
  if (form !== MARK && form !== WITH_VALUE && form !== WITH_ENTRY) return null;
  // The fields before the key hold no U+0001; the key is the rest.
  const fields: string[] = [];
  let from = 1;
  for (let n = form === MARK ? 1 : form === WITH_VALUE ? 2 : 5; n > 0; n--) {
    const at = payload.indexOf(MARK, from);
    if (at < 0) return null;
    fields.push(payload.slice(from, at));
    from = at + 1;
  }
  const workflowId = fields[0];
  const key = payload.slice(from);
  if (form === MARK) return { workflowId, key };
  if (form === WITH_VALUE) return { workflowId, key, event: fields[1] };
  const [, offset, attempt, at, value] = fields;
  return { workflowId, key, entry: { offset: Number(offset), attempt: attempt === '' ? null : Number(attempt), at, value } };
}
