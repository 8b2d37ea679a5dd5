// The ownership policy the engine is built with: one interface of roles (roles.ts), one
// implementation per mode ('none', 'lease', 'workflow-lease'). The engine asks its roles and hands
// them every command; it never looks at which mode it is (docs/ownership.md, docs/architecture.md).
import type { WeftLogger } from '../common/types.js';
import type { SqlClient } from '../storage/sql-client.js';
import { ClaimRepository } from '../storage/repositories/claim.repository.js';
import type { ClaimMetrics } from './claim-registry.js';
import type { OwnershipConfig, OwnershipMode } from './config.js';
import type { ClaimBook, EngineGate, Maintenance, RunFence } from './roles.js';

export interface ClaimDescription {
  workflowId: string;
  mode: string;
  holder: string | null;
  epoch: string | null;
  expiresAt: Date | null;
  claimedAt: Date | null;
  /** Expired by the database clock plus the takeover grace. */
  expired: boolean;
  heldHere: boolean;
}

/** What a policy needs from the engine's runtime; given at construction. */
export interface OwnedRuntime {
  /** Drops the live run of a workflow (abort its signal) without writing anything. */
  stopLive(workflowId: string): void;
  /** Replays a workflow from storage and drives it on. */
  drive(workflowId: string): Promise<void>;
  /** Stops every live run (lease lost). */
  halt(): void;
  registeredTypes(): string[];
  /** Buffered-message polls; returns workflows woken. */
  poll(): Promise<number>;
}

export interface PolicyDependencies {
  sql: SqlClient;
  schema: string;
  engineId: string;
  config: OwnershipConfig;
  logger: WeftLogger;
  metrics?: ClaimMetrics;
  onWarning?: (w: Error) => void;
  runtime: OwnedRuntime;
}

export interface OwnershipFigures {
  halted: boolean;
  claimsHeld: number;
  renewalFailures: number;
  /** Start of the policy's last maintenance pass; undefined when it has no pass of its own. */
  lastPassAt: Date | null | undefined;
  intervalMs: number | undefined;
}

/**
 * The policy of one mode: its roles (roles.ts), each the no-op default where the mode does not
 * play it, and the claim view every mode shares.
 */
export interface OwnershipPolicy {
  readonly mode: OwnershipMode;
  readonly engineId: string;
  readonly config: OwnershipConfig;
  readonly gate: EngineGate;
  readonly fence: RunFence;
  readonly claims: ClaimBook;
  readonly maintenance: Maintenance;
  describe(workflowId: string): Promise<ClaimDescription>;
  figures(): OwnershipFigures;
}

/** What every mode shares: the claim view, which reads the same table in any mode. */
export abstract class BasePolicy {
  private readonly claimRows: ClaimRepository;

  constructor(protected readonly deps: PolicyDependencies) {
    this.claimRows = new ClaimRepository(deps.sql, deps.schema);
  }

  get engineId(): string {
    return this.deps.engineId;
  }

  get config(): OwnershipConfig {
    return this.deps.config;
  }

  get mode(): OwnershipMode {
    return this.deps.config.mode;
  }

  abstract readonly claims: ClaimBook;

  async describe(workflowId: string): Promise<ClaimDescription> {
    const read = await this.claimRows.read(workflowId, this.deps.config.graceMs);
    // A claim whose run ended names its last holder but is held by nobody (docs/decisions/0011).
    const c = read?.ended ? { ...read, engineId: null, expiresAt: null, claimedAt: null, expired: false } : read;
    return {
      workflowId,
      mode: this.mode,
      holder: c?.engineId ?? null,
      epoch: c?.epoch ?? null,
      expiresAt: c?.expiresAt ?? null,
      claimedAt: c?.claimedAt ?? null,
      expired: c?.expired ?? false,
      heldHere: this.claims.registry?.held.has(workflowId) ?? false,
    };
  }
}
