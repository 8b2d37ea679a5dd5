import { Injectable, Logger } from '@nestjs/common';
import { Step, WorkflowRepository } from '@weft/nest';

/** What the scheduled workflows do; each method is a recorded step. */
@Injectable()
export class ReportsService {
  private readonly logger = new Logger('Reports');

  constructor(private readonly workflows: WorkflowRepository) {}

  /** Order workflows by status, read with TypeORM through Weft's repository. */
  @Step()
  async orderCounts(): Promise<Record<string, number>> {
    const rows = await this.workflows
      .createQueryBuilder('w')
      .select('w.status', 'status')
      .addSelect('count(*)::int', 'n')
      .where('w.type = :type', { type: 'order' })
      .groupBy('w.status')
      .getRawMany<{ status: string; n: number }>();
    return Object.fromEntries(rows.map((r) => [r.status, r.n]));
  }

  @Step()
  async publish(report: { at: string; orders: Record<string, number> }): Promise<void> {
    this.logger.log(`Nightly report ${report.at}: ${JSON.stringify(report.orders)}`);
  }

  /** The fake carrier feed: reads the events after `cursor` and returns the new position. */
  @Step({ retry: { maxAttempts: 5, initialInterval: '1s' } })
  async pollCarrier(cursor: number): Promise<number> {
    const events = 1 + (cursor % 3);
    this.logger.debug(`carrier feed: ${events} event(s) after ${cursor}`);
    return cursor + events;
  }

  @Step()
  async ping(at: string): Promise<void> {
    this.logger.debug(`heartbeat ${at}`);
  }
}
