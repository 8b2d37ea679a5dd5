import { Inject, Injectable } from '@nestjs/common';
import { HealthIndicatorService } from '@nestjs/terminus';
import type { OpenedDatabase } from '../storage/data-source';
import { WEFT_DATABASE } from './weft-database.provider';

const PING_TIMEOUT_MS = 2000;

/** Terminus indicator: never throws; reports down with a reason instead. */
@Injectable()
export class WeftHealthIndicator {
  constructor(
    private readonly health: HealthIndicatorService,
    @Inject(WEFT_DATABASE) private readonly db: OpenedDatabase,
  ) {}

  async isHealthy(key = 'weft') {
    const indicator = this.health.check(key);
    const details = { database: this.db.target.kind, schema: this.db.schema };
    try {
      await Promise.race([
        this.db.sql.query('SELECT 1'),
        new Promise((_, reject) => setTimeout(() => reject(new Error(`no answer within ${PING_TIMEOUT_MS} ms`)), PING_TIMEOUT_MS).unref()),
      ]);
      return indicator.up(details);
    } catch (err) {
      return indicator.down({ ...details, reason: (err as Error).message });
    }
  }
}
