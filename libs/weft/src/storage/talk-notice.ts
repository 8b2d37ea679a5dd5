// The NOTIFY payload forms of "a workflow published an event or a stream entry": on the schema's
// one channel (a second channel's name would not fit 63 bytes for the longest schema name), told
// apart from a message's payload (a bare workflow id) by a leading U+0001 or U+0002, which no
// workflow id holds (engine/validation.ts refuses control characters in ids).
//   \x01<workflow id>\x01<key>                   something was written: readers read it
//   \x02<workflow id>\x01<value json>\x01<key>   an event's value as stored (codec-encoded when a
//                                                codec is set): its getEvent waiters need no read
// The value sits before the key because a key may hold U+0001 and JSON text never does (PostgreSQL
// refuses an unescaped control character in json). A value longer than NOTICE_VALUE_BYTES goes in
// the first form: a payload must stay under 8000 bytes, and an id and a key take up to 1020 each.
const MARK = '\u0001';
const WITH_VALUE = '\u0002';

/** The largest event value (bytes of its stored JSON text) a notice carries. */
export const NOTICE_VALUE_BYTES = 4000;

/** The payload as SQL, from a workflow id and a key expression. */
export const talkNoticeSql = (workflowId: string, key: string): string => `chr(1) || ${workflowId} || chr(1) || ${key}`;

/** An event's payload as SQL: with its stored value when that is short enough. */
export const eventNoticeSql = (workflowId: string, key: string, value: string): string =>
  `CASE WHEN octet_length(${value}::text) <= ${NOTICE_VALUE_BYTES} THEN chr(2) || ${workflowId} || chr(1) || ${value}::text || chr(1) || ${key}
    ELSE ${talkNoticeSql(workflowId, key)} END`;

/** The workflow and key a payload names (and the event's stored value as JSON text, when it carries one), or null for a message's payload. */
export function parseTalkNotice(payload: string): { workflowId: string; key: string; value?: string } | null {
  const carries = payload.startsWith(WITH_VALUE);
  if (!carries && !payload.startsWith(MARK)) return null;
  const at = payload.indexOf(MARK, 1);
  if (at < 0) return null;
  const workflowId = payload.slice(1, at);
  if (!carries) return { workflowId, key: payload.slice(at + 1) };
  const end = payload.indexOf(MARK, at + 1);
  if (end < 0) return null;
  return { workflowId, key: payload.slice(end + 1), value: payload.slice(at + 1, end) };
}
