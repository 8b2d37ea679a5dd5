// The base of every repository: a TypeORM Repository over one Weft table (find, findBy, count,
// createQueryBuilder work as usual), whose TypeORM write methods are refused because Weft's
// writes are versioned, fenced statements of their own (docs/architecture.md, "Storage").
import { type EntityManager, type EntityTarget, type ObjectLiteral, Repository } from 'typeorm';
import { RepositoryReadOnlyError } from '../../common/errors.js';
import type { Queryable } from '../sql-client.js';

/** A connection for a repository: Weft's own statements, and TypeORM's manager of the same DataSource. */
export interface SqlAccess extends Queryable {
  readonly manager: EntityManager;
}

const WRITES = [
  'save',
  'insert',
  'update',
  'updateAll',
  'upsert',
  'delete',
  'deleteAll',
  'remove',
  'softDelete',
  'softRemove',
  'restore',
  'recover',
  'clear',
  'increment',
  'decrement',
] as const;

/** A TypeORM Repository over one of Weft's tables, for reading; its TypeORM writes are refused. */
export abstract class WeftRepository<Entity extends ObjectLiteral> extends Repository<Entity> {
  /** @internal */
  protected readonly db: SqlAccess;

  /** @internal */
  constructor(
    db: SqlAccess,
    entity: EntityTarget<Entity>,
    readonly table: string,
  ) {
    super(entity, db.manager);
    this.db = db;
    // Own properties shadow TypeORM's writes without redeclaring each overloaded signature.
    for (const method of WRITES) {
      Object.defineProperty(this, method, {
        value: () => Promise.reject(new RepositoryReadOnlyError(table, method)),
        enumerable: false,
      });
    }
  }
}
