// typeorm-transactional's ambient transaction, loaded lazily (an optional peer; absent, nothing is
// loaded and nothing joins). Its public API only opens transactions of its own, so this reaches
// its context functions (dist/common), stable across its 0.x releases.
import type { DataSource, EntityManager } from 'typeorm';
import type { AmbientTransaction } from '../../common/types.js';

interface Context {
  active?: boolean;
  run<T>(fn: () => T): T;
}

interface TransactionalCommon {
  getTransactionalContext(): Context | undefined;
  getDataSourceByName(name: string): DataSource | undefined;
  getEntityManagerByDataSourceName(context: Context, name: string): EntityManager | null;
  setEntityManagerByDataSourceName(context: Context, name: string, manager: EntityManager | null): void;
}

/** addTransactionalDataSource writes the name it registers a DataSource under on the DataSource itself. */
const NAME_KEY = '@transactional/data-source';

function nameOf(lib: TransactionalCommon, dataSource: DataSource): string | undefined {
  const name = (dataSource as unknown as Record<string, unknown>)[NAME_KEY];
  return typeof name === 'string' && lib.getDataSourceByName(name) === dataSource ? name : undefined;
}

/** Its storage: `driver` is set by initializeTransactionalContext() (until then the app does not use it). */
interface Storage {
  storage?: { driver?: unknown };
}

export function typeormTransactional(lib: TransactionalCommon, storage: Storage): AmbientTransaction {
  // Checked before asking for the context, which throws until initialized: every start asks.
  const context = (): Context | undefined => (storage.storage?.driver ? lib.getTransactionalContext() : undefined);
  return {
    name: 'typeorm-transactional',
    join<T>(manager: EntityManager, fn: () => T): T {
      const ctx = context();
      const name = ctx ? nameOf(lib, manager.connection) : undefined;
      if (!ctx || name === undefined) return fn();
      const joined = () => {
        lib.setEntityManagerByDataSourceName(ctx, name, manager);
        return fn();
      };
      // Outside any of its scopes, its run() enters a store it does not keep (its own
      // @Transactional() nests a second run() the same way): the inner run holds the manager.
      return ctx.active ? ctx.run(joined) : ctx.run(() => ctx.run(joined));
    },
    current(dataSource: DataSource): EntityManager | undefined {
      const ctx = context();
      if (!ctx?.active) return undefined;
      // Weft's own DataSource when the app registered it, else the app's default one (the start
      // then checks that it is on Weft's database).
      const name = nameOf(lib, dataSource) ?? 'default';
      const m = lib.getEntityManagerByDataSourceName(ctx, name);
      return m?.queryRunner?.isTransactionActive ? m : undefined;
    },
  };
}

/** The integration when typeorm-transactional is installed; undefined (and nothing kept) when not. */
export async function loadTypeormTransactional(): Promise<AmbientTransaction | undefined> {
  try {
    const lib = (await import('typeorm-transactional/dist/common/index.js' as string)) as TransactionalCommon & {
      default?: TransactionalCommon;
    };
    const storage = (await import('typeorm-transactional/dist/storage/index.js' as string)) as Storage & { default?: Storage };
    const api = typeof lib.getTransactionalContext === 'function' ? lib : lib.default;
    const store = storage.storage ? storage : storage.default;
    return api && typeof api.getTransactionalContext === 'function' && store?.storage ? typeormTransactional(api, store) : undefined;
  } catch {
    return undefined;
  }
}
