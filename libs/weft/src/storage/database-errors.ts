/**
 * SQLSTATE classes the database answers for the statement itself (data, integrity, syntax,
 * access): sending it again cannot help. Anything else (connection lost, server restarting,
 * too many connections, deadlock, no code at all) is worth another try.
 */
const PERMANENT_SQLSTATE_CLASSES = new Set(['22', '23', '42', '2B', '0A']);

/** Worth sending the same statement again? */
export function isTransientDatabaseError(err: unknown): boolean {
  const code = (err as { code?: unknown })?.code;
  if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code)) return !PERMANENT_SQLSTATE_CLASSES.has(code.slice(0, 2));
  return true;
}
