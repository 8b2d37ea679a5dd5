import type { DataSource, EntityManager } from 'typeorm';
import type { AmbientTransaction } from '../../common/types.js';
import { loadTypeormTransactional } from './typeorm-transactional.js';

/**
 * The libraries' ambient transactions this engine integrates with (docs/transactions.md): given
 * ones (the Nest module gives @nestjs-cls/transactional's) and typeorm-transactional's when it
 * is installed.
 */
export class AmbientTransactions {
  private readonly list: AmbientTransaction[];

  constructor(given: readonly AmbientTransaction[] = []) {
    this.list = [...given];
  }

  /** Loads the integrations of installed optional peers (once, at the engine's creation). */
  async load(): Promise<void> {
    const found = await loadTypeormTransactional();
    if (found && !this.list.some((a) => a.name === found.name)) this.list.push(found);
  }

  /** Some library is integrated: a start looks for its ambient transaction. */
  get any(): boolean {
    return this.list.length > 0;
  }

  get names(): string[] {
    return this.list.map((a) => a.name);
  }

  /** Runs `fn` with `manager` as every library's active transaction. */
  join<T>(manager: EntityManager, fn: () => T): T {
    return this.list.reduce<() => T>((next, a) => () => a.join(manager, next), fn)();
  }

  /** The first library's active transaction here, if any. */
  current(dataSource: DataSource): EntityManager | undefined {
    for (const a of this.list) {
      const m = a.current(dataSource);
      if (m) return m;
    }
    return undefined;
  }
}
