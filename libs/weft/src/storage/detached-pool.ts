// The pg module the engine's own DataSource is given (TypeORM's `driver` option): its Pool keeps
// none of its callers' async contexts. A connection keeps what it was opened with for as long as it
// lives (its socket, an async resource, and pg's connect listener, which holds the checkout that
// opened it), and an idle connection the context of the statement that released it (its idle
// timer): a workflow's run, a request's CLS store, kept by the pool (docs/decisions/0066). A
// DataSource passed in keeps its owner's pg: its pool only gets pool-guard.ts's error listener
// (from SqlClient), as this one does from its construction.
import pg from 'pg';
import { detached } from '../common/detached.js';
import { guardPoolClients } from './pool-guard.js';

/**
 * pg-pool's own `newClient` and `_release` (not in its types). Either absent in another pg-pool is
 * left alone: what it keeps, it keeps, nothing breaks. A checkout (`connect`) stays in its
 * caller's context: a statement sent on an idle connection still runs in it (a tracer's pg spans
 * keep their parent).
 */
interface PoolMethods {
  newClient?(...args: unknown[]): unknown;
  _release?(...args: unknown[]): unknown;
}

interface Checkout {
  callback?: (...args: unknown[]) => unknown;
}

/**
 * The checkout a new connection is opened for, as newClient sees it: reads go to the caller's
 * (its `timedOut`, set later by the caller's timeout) until its callback is called, once; then the
 * link is cut, so the connection's connect listener no longer reaches the caller's callback.
 */
function relay(checkout: unknown): unknown {
  if (checkout === null || typeof checkout !== 'object') return checkout;
  const item = checkout as Checkout;
  const r = Object.create(item) as Checkout;
  r.callback = (...args: unknown[]) => {
    Object.setPrototypeOf(r, null);
    r.callback = undefined;
    return item.callback?.(...args);
  };
  return r;
}

const base = pg.Pool.prototype as unknown as PoolMethods;

class DetachedPool extends pg.Pool {
  constructor(...args: ConstructorParameters<typeof pg.Pool>) {
    super(...args);
    guardPoolClients(this);
  }
}

const own = DetachedPool.prototype as unknown as PoolMethods;
for (const name of ['newClient', '_release'] as const) {
  const original = base[name];
  if (typeof original !== 'function') continue;
  own[name] =
    name === 'newClient'
      ? function (this: pg.Pool, checkout: unknown, ...rest: unknown[]) {
          return detached(() => original.call(this, relay(checkout), ...rest));
        }
      : function (this: pg.Pool, ...args: unknown[]) {
          return detached(() => original.apply(this, args));
        };
}

/** pg, with DetachedPool for its Pool (everything else read from pg itself). */
export const detachedPg: typeof pg = Object.create(pg, { Pool: { value: DetachedPool, enumerable: true } }) as typeof pg;
