// @nestjs-cls/transactional's ambient transaction (TypeORM adapter), loaded lazily (an optional
// peer; absent, nothing is loaded and nothing joins). Inside a transactional body, every
// TransactionHost whose adapter serves the body's DataSource has the body's manager as its `tx`,
// so `@Transactional()` methods (propagation Required) and `txHost.tx` join it.
import type { DataSource, EntityManager } from 'typeorm';
import type { AmbientTransaction } from '../common/types.js';

interface Host {
  isTransactionActive(): boolean;
  readonly tx: unknown;
}
interface HostInternals {
  cls: { run<T>(options: { ifNested: 'inherit' }, fn: () => T): T };
  setTxInstance(tx: unknown): void;
  _options: { getFallbackInstance(): unknown };
}
interface TransactionHostClass {
  _instanceMap: Map<symbol, Host>;
}

/** The TypeORM adapter's tx and fallback are EntityManagers; other adapters' are not joined. */
const managerOf = (x: unknown): EntityManager | undefined =>
  x && typeof x === 'object' && 'connection' in x && typeof (x as EntityManager).getRepository === 'function'
    ? (x as EntityManager)
    : undefined;

/** The hosts whose fallback (non-transactional) manager is on `dataSource`. */
function hostsOf(cls: TransactionHostClass, dataSource: DataSource): Host[] {
  return [...cls._instanceMap.values()].filter(
    (h) => managerOf((h as unknown as HostInternals)._options.getFallbackInstance())?.connection === dataSource,
  );
}

export function clsTransactional(cls: TransactionHostClass): AmbientTransaction {
  return {
    name: '@nestjs-cls/transactional',
    join<T>(manager: EntityManager, fn: () => T): T {
      // Nested: each host in turn runs the next inside its own context with the manager as its tx.
      return hostsOf(cls, manager.connection).reduce<() => T>((next, host) => {
        const h = host as unknown as HostInternals;
        return () =>
          h.cls.run({ ifNested: 'inherit' }, () => {
            h.setTxInstance(manager);
            return next();
          });
      }, fn)();
    },
    current(dataSource: DataSource): EntityManager | undefined {
      const hosts = [...cls._instanceMap.values()];
      const preferred = [...hostsOf(cls, dataSource), ...hosts];
      for (const h of preferred) {
        const m = h.isTransactionActive() ? managerOf(h.tx) : undefined;
        if (m?.queryRunner?.isTransactionActive) return m;
      }
      return undefined;
    },
  };
}

/** The integration when @nestjs-cls/transactional is installed; undefined (and nothing kept) when not. */
export async function loadClsTransactional(): Promise<AmbientTransaction | undefined> {
  try {
    const lib = (await import('@nestjs-cls/transactional' as string)) as { TransactionHost?: TransactionHostClass };
    return lib.TransactionHost?._instanceMap instanceof Map ? clsTransactional(lib.TransactionHost) : undefined;
  } catch {
    return undefined;
  }
}
