// node-pg's pool takes its own 'error' listener off a connection while it is checked out, and the
// holder puts one on only once its checkout has resolved, a microtask later. A new connection is
// handed out from inside the socket event that completed its startup: when the server ended the
// session in the same packet (a backend terminated as it started, a fast shutdown), node-pg
// parses that FATAL before the holder listens, emits 'error' with no listener, and the process
// dies (docs/decisions/0067). Every connection of a guarded pool keeps a listener for its whole
// life; the holder still sees the failure (its next statement is refused) and the pool discards
// the connection when it comes back.
import type { Pool, PoolClient } from 'pg';

const guarded = new WeakSet<Pool>();

/** Does nothing: the holder and the pool deal with the lost connection (see above). */
const heard = (): void => undefined;

/** Gives every connection `pool` opens from now on an 'error' listener for its whole life. Idempotent. */
export function guardPoolClients(pool: Pool): void {
  if (guarded.has(pool)) return;
  guarded.add(pool);
  pool.on('connect', (client: PoolClient) => void client.on('error', heard));
}
