// What one CLI invocation works on: the database (opened without migrating), the repositories,
// and, for the commands that write transitions, an engine built to write them safely.
import { CliLeaseModeError, CliUsageError, SchemaNotMigratedError } from './errors.js';
import type { WeftLogger } from '../common/types.js';
import { WeftEngine } from '../engine/engine.js';
import { openDatabase, type OpenedDatabase } from '../storage/data-source.js';
import { weftMigrations } from '../storage/migrations/index.js';
import { ClaimRepository } from '../storage/repositories/claim.repository.js';
import { LeaseRepository } from '../storage/repositories/lease.repository.js';
import { OwnershipMarkerRepository } from '../storage/repositories/ownership-marker.repository.js';
import { qualify, validateSchemaName } from '../storage/schema-name.js';
import { WorkflowStore } from '../storage/workflow-store.js';
import { Payloads } from '../storage/payloads.js';
import type { CodecOption } from '../common/codec.js';

export type Mode = 'none' | 'lease' | 'workflow-lease';

export interface SessionOptions {
  databaseUrl: string | undefined;
  schema: string | undefined;
  /** Warnings of the engine, never on stdout. */
  logger: WeftLogger;
  /** `--codec`: payloads are decoded (and the writer engine encodes); without, an encoded one reads as "[encrypted: ...]". */
  codec?: CodecOption;
}

export class Session {
  readonly store: WorkflowStore;
  readonly claims: ClaimRepository;
  readonly lease: LeaseRepository;
  readonly marker: OwnershipMarkerRepository;
  /** What the store reads payloads with: the --codec, marking a payload of a codec it lacks. */
  readonly payloads: Payloads;
  private engine: Promise<WeftEngine> | undefined;

  private constructor(
    readonly db: OpenedDatabase,
    private readonly logger: WeftLogger,
    private readonly codec: CodecOption | undefined,
  ) {
    // Without --codec (or for a codec id it lacks), an encoded payload reads as "[encrypted: ...]" (docs/codecs.md).
    this.payloads = new Payloads(codec, 'mark');
    this.store = new WorkflowStore(db.sql, db.schema, undefined, this.payloads);
    this.claims = new ClaimRepository(db.sql, db.schema);
    this.lease = new LeaseRepository(db.sql, db.schema);
    this.marker = new OwnershipMarkerRepository(db.sql, db.schema);
  }

  /**
   * Connects without migrating: an operator's typo in --schema must not create Weft tables, and
   * a CLI newer than the engines must not change their schema under them. A schema that is
   * missing or behind this package's migrations is a SchemaNotMigratedError instead.
   */
  static async open(o: SessionOptions): Promise<Session> {
    if (!o.databaseUrl) {
      throw new CliUsageError('No database: pass --database-url postgres://user:password@host:5432/db or set DATABASE_URL');
    }
    const schema = validateSchemaName(o.schema ?? 'public');
    const db = await openDatabase({ database: { url: o.databaseUrl, poolSize: 4 }, schema, migrate: false });
    try {
      await assertMigrated(db);
      return new Session(db, o.logger, o.codec);
    } catch (err) {
      await db.close();
      throw err;
    }
  }

  /** The mode the database was established with; no marker: no fencing engine ever started, so 'none'. */
  async mode(): Promise<Mode> {
    const row = await this.marker.findOneBy({ id: 1 });
    return (row?.mode as Mode | undefined) ?? 'none';
  }

  /**
   * An engine for cancel, suspend and resume (and the schedule writes, engine.schedules): every write goes through the engine's own
   * transitions, so it carries the version check, and under 'workflow-lease' rotates the claim
   * epoch, which fences the owner's next write and makes its next renewal drop the run. It
   * registers no workflow types and runs no background tasks: its bootstrap (the ownership gates,
   * at the mode the database records) recovers nothing, and it never reclaims, polls or fires
   * timers, so it takes over nobody's workflows. Under 'lease' its bootstrap would contend for
   * the global lease, so those commands are refused.
   */
  writer(command: string, target: 'workflows' | 'schedules' = 'workflows'): Promise<WeftEngine> {
    this.engine ??= (async () => {
      const mode = await this.mode();
      if (mode === 'lease') {
        const lease = await this.lease.findOneBy({ id: 1 });
        throw new CliLeaseModeError(command, lease?.holder ?? null, target);
      }
      const engine = new WeftEngine(this.db, {
        ownership: mode,
        engineId: `weft-cli:${process.pid}`,
        backgroundTasks: 'manual',
        notify: false,
        shutdownGracePeriod: 0,
        logger: this.logger,
        ...(this.codec ? { codec: this.codec } : {}),
      });
      try {
        await engine.bootstrap();
      } catch (err) {
        await engine.dispose();
        throw err;
      }
      return engine;
    })();
    return this.engine;
  }

  async close(): Promise<void> {
    const engine = await this.engine?.catch(() => undefined);
    await engine?.dispose();
    await this.db.close();
  }
}

async function assertMigrated(db: OpenedDatabase): Promise<void> {
  const known = weftMigrations(db.schema).map((m) => ({ id: m.id, name: m.migration.name ?? String(m.id) }));
  const [{ present }] = await db.sql.query<{ present: boolean }>(`SELECT to_regclass($1) IS NOT NULL AS present`, [
    qualify(db.schema, 'weft_schema_migrations'),
  ]);
  if (!present)
    throw new SchemaNotMigratedError(
      db.schema,
      known.map((m) => m.name),
      true,
    );
  const applied = new Set(
    (await db.sql.query<{ id: string }>(`SELECT id::text AS id FROM ${qualify(db.schema, 'weft_schema_migrations')}`)).map((r) => r.id),
  );
  const pending = known.filter((m) => !applied.has(String(m.id))).map((m) => m.name);
  if (pending.length) throw new SchemaNotMigratedError(db.schema, pending, applied.size === 0);
}
