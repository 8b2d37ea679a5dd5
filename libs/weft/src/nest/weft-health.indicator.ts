import { Injectable } from '@nestjs/common';
import { HealthIndicatorService } from '@nestjs/terminus';
import { WeftEngine } from '../engine/engine.js';
import { WeftLifecycle } from './weft-lifecycle.service.js';

const PING_TIMEOUT_MS = 2000;
/** Sub-second intervals would flap on one slow pass or event-loop pause. */
const MIN_STALE_MS = 1000;

const redact = (m: string) => m.replace(/postgres(?:ql)?:\/\/\S+/gi, 'postgres://[redacted]');

/** Terminus indicators for the engine and its database; never throw, report down with a reason. */
@Injectable()
export class WeftHealthIndicator {
  constructor(
    private readonly health: HealthIndicatorService,
    private readonly engine: WeftEngine,
    private readonly lifecycle: WeftLifecycle,
  ) {}

  /**
   * Up when the database answers `SELECT 1` within 2 s, the bootstrap finished, and the last
   * background pass is younger than two intervals (skipped under backgroundTasks 'manual').
   */
  async isHealthy(key = 'weft') {
    const indicator = this.health.check(key);
    const s = this.engine.healthSnapshot();
    const details = {
      engineId: s.engineId,
      ownership: s.ownership,
      claimsHeld: s.claimsHeld,
      renewalFailures: s.renewalFailures,
      liveWorkflows: s.liveWorkflows,
      queues: s.queues,
    };
    const reason = await this.problem();
    return reason ? indicator.down({ ...details, reason }) : indicator.up(details);
  }

  /** Database reachability alone: `SELECT 1` within 2 s. */
  async pingCheck(key = 'database') {
    const indicator = this.health.check(key);
    const started = Date.now();
    const failure = await this.ping();
    const t = this.engine.database.target;
    const details = { database: t.kind, schema: this.engine.database.schema };
    return failure ? indicator.down({ ...details, reason: failure }) : indicator.up({ ...details, responseTimeMs: Date.now() - started });
  }

  private async problem(): Promise<string | null> {
    const s = this.engine.healthSnapshot();
    if (s.disposed) return 'engine disposed';
    if (s.halted) return 'deposed from the global lease: this engine runs nothing (ownership lease)';
    const db = await this.ping();
    if (db) return `database: ${db}`;
    if (this.lifecycle.state === 'failed') return `bootstrap failed: ${redact(this.lifecycle.failure ?? 'unknown error')}`;
    if (!s.bootstrapped || this.lifecycle.state !== 'ready') return 'bootstrap not finished';
    if (s.backgroundTasks === 'manual') return null;
    const limit = Math.max(2 * s.backgroundIntervalMs, MIN_STALE_MS);
    const last = s.lastBackgroundPassAt?.getTime() ?? this.lifecycle.readyAt ?? 0;
    const age = Date.now() - last;
    return age > limit ? `last background pass ${age} ms ago (limit ${limit} ms)` : null;
  }

  /** Null when the database answered in time, else why not. */
  private async ping(): Promise<string | null> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${PING_TIMEOUT_MS} ms`)), PING_TIMEOUT_MS);
    });
    try {
      await Promise.race([this.engine.database.sql.query('SELECT 1'), timeout]);
      return null;
    } catch (err) {
      return redact((err as Error)?.message ?? String(err));
    } finally {
      clearTimeout(timer);
    }
  }
}
