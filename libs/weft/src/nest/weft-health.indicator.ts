import { Injectable, Logger } from '@nestjs/common';
import { HealthIndicatorService } from '@nestjs/terminus';
import { WeftEngine } from '../engine/engine.js';
import { WeftLifecycle } from './weft-lifecycle.service.js';

const PING_TIMEOUT_MS = 2000;
/** Sub-second intervals would flap on one slow pass or event-loop pause. */
const MIN_STALE_MS = 1000;

const redact = (m: string) => m.replace(/postgres(?:ql)?:\/\/\S+/gi, 'postgres://[redacted]');

/** Why an indicator is down: a stable code and a reason that names no database, host or driver text. */
interface Problem {
  code: string;
  reason: string;
}

/**
 * Terminus indicators for the engine and its database; never throw, report down with a code and
 * a reason. /health is usually unguarded, so the driver's message (which names the database, the
 * host, the user) goes to the log, not into the answer.
 */
@Injectable()
export class WeftHealthIndicator {
  private readonly logger = new Logger('WeftHealth');
  /** The database failure last logged: a down database is logged once per distinct failure, not per probe. */
  private loggedFailure: string | null = null;

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
    const problem = await this.problem();
    return problem ? indicator.down({ ...details, ...problem }) : indicator.up(details);
  }

  /** Database reachability alone: `SELECT 1` within 2 s. */
  async pingCheck(key = 'database') {
    const indicator = this.health.check(key);
    const started = Date.now();
    const failure = await this.ping();
    const t = this.engine.database.target;
    const details = { database: t.kind, schema: this.engine.database.schema };
    return failure ? indicator.down({ ...details, ...failure }) : indicator.up({ ...details, responseTimeMs: Date.now() - started });
  }

  private async problem(): Promise<Problem | null> {
    const s = this.engine.healthSnapshot();
    if (s.disposed) return { code: 'WEFT_ENGINE_DISPOSED', reason: 'engine disposed' };
    if (s.halted)
      return { code: 'WEFT_ENGINE_DEPOSED', reason: 'deposed from the global lease: this engine runs nothing (ownership lease)' };
    const db = await this.ping();
    if (db) return db;
    if (this.lifecycle.state === 'failed') return { code: 'WEFT_BOOTSTRAP_FAILED', reason: 'bootstrap failed; the log says why' };
    if (!s.bootstrapped || this.lifecycle.state !== 'ready') return { code: 'WEFT_ENGINE_NOT_READY', reason: 'bootstrap not finished' };
    if (s.backgroundTasks === 'manual') return null;
    const limit = Math.max(2 * s.backgroundIntervalMs, MIN_STALE_MS);
    const last = s.lastBackgroundPassAt?.getTime() ?? this.lifecycle.readyAt ?? 0;
    const age = Date.now() - last;
    return age > limit ? { code: 'WEFT_BACKGROUND_STALLED', reason: `last background pass ${age} ms ago (limit ${limit} ms)` } : null;
  }

  /** Null when the database answered in time, else the problem (its detail logged). */
  private async ping(): Promise<Problem | null> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${PING_TIMEOUT_MS} ms`)), PING_TIMEOUT_MS);
    });
    try {
      await Promise.race([this.engine.database.sql.query('SELECT 1'), timeout]);
      if (this.loggedFailure !== null) this.logger.log('Health: the database answers again');
      this.loggedFailure = null;
      return null;
    } catch (err) {
      const detail = redact((err as Error)?.message ?? String(err));
      if (detail !== this.loggedFailure) this.logger.warn(`Health: the database is unavailable: ${detail}`);
      this.loggedFailure = detail;
      return { code: 'WEFT_DATABASE_UNAVAILABLE', reason: 'database unavailable; the log says why' };
    } finally {
      clearTimeout(timer);
    }
  }
}
