import { Inject, Injectable, Logger, type OnApplicationShutdown } from '@nestjs/common';
import { DatabaseUnavailableError, startEmbeddedPostgres, WEFT_ENTITIES, type EmbeddedPostgresHandle } from '@weft/nest';
import { DataSource } from 'typeorm';
import { demoConfig, type DemoConfig } from '../config/demo.config.js';
import { ensureDemoSchema } from './demo-schema.js';
import { OrderRecord } from './order-record.entity.js';

/**
 * The demo's own TypeORM DataSource, on DATABASE_URL or (unset) the embedded server under
 * ./.weft/pg. Weft is given this DataSource (`database: dataSource`), so a transactional step's
 * `manager` and a request's transaction are both on it: orders commit with workflow progress.
 */
@Injectable()
export class DemoDatabase implements OnApplicationShutdown {
  private readonly logger = new Logger('DemoDatabase');
  private embedded: EmbeddedPostgresHandle | null = null;
  private source: DataSource | null = null;

  constructor(@Inject(demoConfig.KEY) private readonly config: DemoConfig) {}

  async open(): Promise<DataSource> {
    let url = this.config.weft.databaseUrl;
    if (!url) {
      this.embedded = await startEmbeddedPostgres({ log: (line) => this.logger.log(line) });
      url = this.embedded.url;
    }
    // Weft's entities and schema too, so that Weft's read-only repositories (the nightly report's
    // counts) find their tables. Transactional bodies each hold a connection while they run; Weft
    // keeps two for itself.
    this.source = new DataSource({
      type: 'postgres',
      url,
      schema: this.config.weft.schema,
      entities: [...WEFT_ENTITIES, OrderRecord],
      applicationName: 'weft-demo',
      connectTimeoutMS: 5000,
      extra: { max: 20 },
    });
    try {
      await this.source.initialize();
      await ensureDemoSchema(this.source);
    } catch (err) {
      await this.close();
      const where = new URL(url);
      throw DatabaseUnavailableError.fromConnectError(where.hostname, Number(where.port || 5432), err) ?? err;
    }
    return this.source;
  }

  /** After Weft's engine is disposed (its hook is beforeApplicationShutdown, this one runs after every such hook). */
  async onApplicationShutdown(): Promise<void> {
    await this.close();
  }

  private async close(): Promise<void> {
    const source = this.source;
    this.source = null;
    if (source?.isInitialized) await source.destroy().catch((err: Error) => this.logger.warn(`closing the DataSource: ${err.message}`));
    const embedded = this.embedded;
    this.embedded = null;
    await embedded?.stop();
  }
}
