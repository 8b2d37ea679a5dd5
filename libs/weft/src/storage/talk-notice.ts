// The NOTIFY payload form of "a workflow published an event or a stream entry": on the schema's
// one channel (a second channel's name would not fit 63 bytes for the longest schema name), told
// apart from a message's payload (a bare workflow id) by a leading U+0001, which no workflow id
// holds (engine/validation.ts refuses control characters in ids). Form: \x01<workflow id>\x01<key>.
const MARK = '\u0001';

/** The payload as SQL, from a workflow id and a key expression. */
export const talkNoticeSql = (workflowId: string, key: string): string => `chr(1) || ${workflowId} || chr(1) || ${key}`;

/** The workflow and key a payload names, or null for a message's payload. */
export function parseTalkNotice(payload: string): { workflowId: string; key: string } | null {
  if (!payload.startsWith(MARK)) return null;
  const at = payload.indexOf(MARK, 1);
  if (at < 0) return null;
  return { workflowId: payload.slice(1, at), key: payload.slice(at + 1) };
}
