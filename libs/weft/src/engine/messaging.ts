import type { PoolClient } from 'pg';
import {
  QueryFailedError,
  recordedError,
  UnknownHandlerError,
  UpdateFailedError,
  UpdateRejectedError,
  UpdateTimeoutError,
  WorkflowNotFoundError,
  WorkflowNotRunningError,
} from '../common/errors.js';
import type { SqlClient } from '../storage/sql-client.js';
import { parseQueueNotice, parseTalkNotice } from '../storage/talk-notice.js';
import type { TalkWaiters } from './talk-waiters.js';
import type { WorkflowStore } from '../storage/workflow-store.js';
import { Duration, parseDuration } from '../common/duration.js';
import type { UpdateOutcome } from './run/delivery.js';
import type { Execution } from './run/execution.js';
import type { ResolvedEngineOptions } from './options.js';
import type { WorkflowRegistry } from './registry.js';
import type { Runtime } from './run/runtime.js';
import type { CallerTransaction } from './caller-transaction.js';
import type { OwnershipPolicy } from '../ownership/policy.js';
import { toStoredJson, validateName, validateWorkflowId } from './validation.js';
import { WorkflowStatus } from '../common/types.js';

const POLL_LIMIT = 500;
/** An update request's row in one of these has its outcome. */
const ENDED_UPDATE = new Set(['done', 'failed', 'refused', 'rejected']);

function validName(kind: string, name: unknown): string {
  return validateName(`${kind} name`, name);
}

export interface MessagingDependencies {
  store: WorkflowStore;
  runtime: Runtime;
  registry: WorkflowRegistry;
  options: ResolvedEngineOptions;
  sql: SqlClient;
  /** Who may drive a woken workflow, answer a query live, and which claims bound the poll. */
  ownership: OwnershipPolicy;
  isDisposed(): boolean;
  /** Who waits for events and stream entries here: the LISTEN connection wakes them too. */
  waiters: TalkWaiters;
  /** Another engine (or this one: `engineId` says) freed a queue slot with work left. */
  queueFreed(queue: string, engineId: string): void;
}

/**
 * Signals, updates and queries (docs/messages.md), the LISTEN connection that wakes owners
 * at once, and the owner-side poll that is its backstop.
 */
export class Messaging {
  private listener: PoolClient | undefined;
  private listenRetryMs = 250;
  private closed = false;
  private reconnectTimer: NodeJS.Timeout | undefined;
  /** Highest message id a poll already woke each non-live workflow for (bounded). */
  private readonly polled = new Map<string, string>();
  /** Inbox fetches under way (onNotify): a message on its way to a parked run (the testing kit's quiet). */
  private fetching = 0;

  private readonly store: WorkflowStore;
  private readonly runtime: Runtime;
  private readonly registry: WorkflowRegistry;
  private readonly options: ResolvedEngineOptions;
  private readonly sql: SqlClient;
  private readonly ownership: OwnershipPolicy;
  private readonly isDisposed: () => boolean;
  private readonly waiters: TalkWaiters;
  private readonly queueFreed: (queue: string, engineId: string) => void;

  constructor(deps: MessagingDependencies) {
    ({ store: this.store, runtime: this.runtime, registry: this.registry, options: this.options } = deps);
    ({ sql: this.sql, ownership: this.ownership, isDisposed: this.isDisposed, waiters: this.waiters } = deps);
    this.queueFreed = deps.queueFreed;
  }

  /** `tx`: sent in the caller's transaction; the owner is woken when it commits (its NOTIFY goes out then too). */
  async signal(workflowId: string, name: string, payload: unknown, tx?: CallerTransaction): Promise<void> {
    validateWorkflowId(workflowId);
    validName('signal', name);
    const stored = toStoredJson(payload, `Payload of signal "${name}"`, this.options.maxPayloadBytes);
    const res = await this.store.messages.send(workflowId, 'signal', name, stored, tx?.via);
    if (!res) throw new WorkflowNotFoundError(workflowId);
    if (!res.messageId) throw new WorkflowNotRunningError(workflowId, res.status);
    if (tx) tx.onCommit(() => this.onNotify(workflowId));
    else this.onNotify(workflowId);
  }

  /** Request/response: resolves with the handler's return value, whichever engine owns the workflow. */
  async update<R = unknown>(workflowId: string, name: string, args: unknown, opts: { timeout?: Duration } = {}): Promise<R> {
    validateWorkflowId(workflowId);
    validName('update', name);
    const timeoutMs = parseDuration(opts.timeout ?? '30s', 'update timeout');
    const stored = toStoredJson(args, `Arguments of update "${name}"`, this.options.maxPayloadBytes);
    const row = await this.store.workflows.get(workflowId);
    if (!row) throw new WorkflowNotFoundError(workflowId);
    if (row.status !== WorkflowStatus.Running) throw new WorkflowNotRunningError(workflowId, row.status);
    if (this.registry.has(row.type) && !this.registry.get(row.type).updateHandlers?.[name]) {
      throw new UnknownHandlerError(row.type, 'update', name);
    }
    return this.sendUpdate<R>(workflowId, name, stored, timeoutMs);
  }

  /**
   * updateWithStart's update, once the start is written (or found): a workflow not running yet
   * (queued, delayed) takes it when it runs; one that already ended refuses it. `stored` is checked.
   */
  async sendUpdate<R>(workflowId: string, name: string, stored: unknown, timeoutMs: number): Promise<R> {
    const res = await this.store.messages.send(workflowId, 'update', name, stored);
    if (!res) throw new WorkflowNotFoundError(workflowId);
    if (!res.messageId) throw new WorkflowNotRunningError(workflowId, res.status);
    this.onNotify(workflowId);
    return this.awaitUpdate<R>(workflowId, name, res.messageId, timeoutMs);
  }

  /**
   * Waits for the request's outcome on its row: `done`, `failed` or `refused` (applied or refused
   * by the owner), `rejected` (its validator refused it: the row goes, nothing else was written),
   * or still `pending` / `accepted` (an async handler runs) until the timeout.
   */
  async awaitUpdate<R>(workflowId: string, name: string, messageId: string, timeoutMs: number): Promise<R> {
    const deadline = Date.now() + timeoutMs;
    let pollMs = 10;
    for (;;) {
      const row = await this.store.messages.readUpdate(messageId);
      if (row && ENDED_UPDATE.has(row.status)) return this.updateResult<R>(workflowId, name, messageId, row);
      const left = deadline - Date.now();
      if (left <= 0) break;
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, Math.min(pollMs, left));
        this.runtime.awaitUpdate(messageId, () => {
          clearTimeout(t);
          resolve();
        });
      });
      this.runtime.stopAwaitingUpdate(messageId);
      pollMs = Math.min(pollMs * 2, 200);
    }
    // Withdraw it, unless it was applied at the last moment: then its result stands. One the
    // workflow accepted goes on there (its handler is never run twice): the caller is told so.
    if (await this.store.messages.expireUpdate(messageId)) throw new UpdateTimeoutError(workflowId, name, timeoutMs);
    const row = await this.store.messages.readUpdate(messageId);
    if (row && ENDED_UPDATE.has(row.status)) return this.updateResult<R>(workflowId, name, messageId, row);
    throw new UpdateTimeoutError(workflowId, name, timeoutMs, true);
  }

  private async updateResult<R>(workflowId: string, name: string, messageId: string, row: { status: string; result: unknown }): Promise<R> {
    const out = (row.result ?? {}) as UpdateOutcome;
    if (row.status === 'rejected') {
      await this.store.messages.dropRejected(messageId); // a rejected request leaves no trace
      throw new UpdateRejectedError(workflowId, name, recordedError(out.error as Record<string, unknown>));
    }
    if (out.error) throw new UpdateFailedError(workflowId, name, recordedError(out.error));
    return out.value as R;
  }

  /** Read-only: the owner answers from its live run; anyone else replays history, running nothing. */
  async query<R = unknown>(workflowId: string, name: string, args: unknown = undefined): Promise<R> {
    validateWorkflowId(workflowId);
    validName('query', name);
    toStoredJson(args, `Arguments of query "${name}"`, this.options.maxPayloadBytes);
    const live = this.runtime.liveRun(workflowId);
    const loaded = live ? undefined : await this.store.workflows.load(workflowId);
    const type = live?.definition.name ?? loaded?.row.type;
    if (!type) throw new WorkflowNotFoundError(workflowId);
    const def = this.registry.get(type);
    const method = def.queryHandlers?.[name];
    if (!method) throw new UnknownHandlerError(type, 'query', name);
    if (live && this.answersLive(live)) return this.answer<R>(live.instance as object, method, args, name);
    const source = loaded ?? (await this.store.workflows.load(workflowId));
    if (!source) throw new WorkflowNotFoundError(workflowId);
    const instance = await this.runtime.replayForQuery(source, 10_000).catch((err: Error) => {
      throw new QueryFailedError(workflowId, name, err.message, { cause: err });
    });
    return this.answer<R>(instance, method, args, name);
  }

  /** The live instance answers only while this engine's hold is valid (not after a long pause). */
  private answersLive(live: Execution): boolean {
    return live.state === 'active' && !live.isReplaying && live.instance !== undefined && this.ownership.fence.mayAnswer(live.workflowId);
  }

  private answer<R>(instance: object, method: string, args: unknown, name: string): R {
    const fn = (instance as Record<string, unknown>)[method] as (a: unknown) => unknown;
    return toStoredJson(fn.call(instance, args), `Result of query "${name}"`, this.options.maxPayloadBytes) as R;
  }

  /** A message arrived for a workflow (NOTIFY, poll, or sent here): delivered to its live run (Runtime.deliverInbox), or it is driven. */
  onNotify(workflowId: string): void {
    if (this.runtime.isLive(workflowId)) {
      this.fetching++;
      void this.runtime
        .deliverInbox(workflowId)
        .catch((err) => this.options.logger.warn(`Fetching messages for "${workflowId}" failed: ${(err as Error).message}`))
        .finally(() => this.fetching--);
    } else if (this.ownership.fence.holds(workflowId) && !this.isDisposed()) {
      this.runtime.drive(workflowId).catch((err) => {
        // Not woken after all: the next poll must try again, not skip it as handled.
        this.polled.delete(workflowId);
        this.options.logger.warn(`Waking "${workflowId}" failed: ${(err as Error).message}`);
      });
    }
  }

  /** A notification: an event or stream entry's (storage/talk-notice.ts), or a message's (the workflow id). */
  private onPayload(payload: string): void {
    const freed = parseQueueNotice(payload);
    if (freed) return this.queueFreed(freed.queue, freed.engineId);
    const talk = parseTalkNotice(payload);
    if (talk) this.waiters.notified(talk);
    else this.onNotify(payload);
  }

  /** @internal No inbox fetch is under way (the testing kit's clock waits for quiet). */
  get isQuiet(): boolean {
    return this.fetching === 0;
  }

  /** One query for all: buffered messages of the workflows this engine may drive. */
  async poll(): Promise<number> {
    const rows = await this.store.messages.poll(this.ownership.claims.pollOwner, this.registry.names(), POLL_LIMIT);
    let woken = 0;
    for (const r of rows) {
      const exec = this.runtime.liveRun(r.workflow_id);
      if (exec) {
        // Nothing new for the live run: it has the newest, and it holds as many unconsumed as are stored.
        if (exec.inbox.has(r.last_id) && Number(r.pending) <= exec.inbox.messages.length) continue;
      } else {
        const seen = this.polled.get(r.workflow_id);
        if (seen !== undefined && BigInt(r.last_id) <= BigInt(seen)) continue;
        this.polled.set(r.workflow_id, r.last_id);
      }
      this.onNotify(r.workflow_id);
      woken++;
    }
    if (this.polled.size > 10_000) this.polled.clear();
    return woken;
  }

  /** LISTEN on one dedicated connection; reconnects with backoff and polls after every reconnect. */
  async listen(): Promise<void> {
    if (this.closed) return;
    let client: PoolClient | undefined;
    try {
      client = await this.sql.pool.connect();
      const mine = client;
      client.on('notification', (n) => n.payload && this.onPayload(n.payload));
      client.on('error', () => this.reconnect(mine));
      client.on('end', () => this.reconnect(mine));
      await this.store.messages.listen(client);
      // Closed while this connected (a reconnect at shutdown): a client kept here would never be
      // released, and ending the pool waits for every client it handed out.
      if (this.closed) return void client.release(true);
      this.listener = client;
      this.listenRetryMs = 250;
    } catch (err) {
      client?.release(true); // its LISTEN failed: not put back for reuse
      if (this.closed) return;
      this.options.logger.warn(`LISTEN failed (${(err as Error).message}); retrying in ${this.listenRetryMs} ms`);
      this.scheduleReconnect();
    }
  }

  private reconnect(client: PoolClient): void {
    if (this.listener !== client) return;
    this.listener = undefined;
    try {
      client.release(true);
    } catch {
      /* already gone */
    }
    this.scheduleReconnect();
  }

  private scheduleReconnect(): void {
    if (this.closed || this.reconnectTimer) return;
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = undefined;
      void this.listen().then(() => {
        // Notifications sent while we were away are lost: poll once.
        if (this.listener) return this.poll().catch(() => undefined);
      });
    }, this.listenRetryMs);
    this.listenRetryMs = Math.min(this.listenRetryMs * 2, 10_000);
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    const client = this.listener;
    this.listener = undefined;
    if (client) {
      await this.store.messages.unlisten(client).catch(() => undefined);
      client.release();
    }
  }
}
