import { Inject, Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import { openDatabase, OpenedDatabase } from '../storage/data-source';
import { WEFT_MODULE_OPTIONS, WeftModuleOptions } from './weft.module-definition';

export const WEFT_DATABASE = Symbol('WEFT_DATABASE');

export const weftDatabaseProvider = {
  provide: WEFT_DATABASE,
  inject: [WEFT_MODULE_OPTIONS],
  useFactory: async (options: WeftModuleOptions): Promise<OpenedDatabase> => {
    const logger = new Logger('Weft');
    const db = await openDatabase({ database: options.database, schema: options.schema, log: (l) => logger.log(l) });
    logger.log(`Database ready (${db.target.kind} at ${db.target.host}:${db.target.port}, schema "${db.schema}")`);
    return db;
  },
};

/** Closes the database last: after every beforeApplicationShutdown hook has drained. */
@Injectable()
export class WeftDatabaseCloser implements OnApplicationShutdown {
  constructor(@Inject(WEFT_DATABASE) private readonly db: OpenedDatabase) {}

  async onApplicationShutdown(): Promise<void> {
    await this.db.close();
  }
}
