// External completion (docs/long-steps.md): a step with `{ complete: 'external' }` runs its body,
// then waits for engine.completeStep(token, result) or failStep(token, error), called on any
// engine. The outcome is stored once in the step's progress row (the statement refuses a second);
// the engine that runs the step learns of it at once when the call is made there, else by one
// poll statement for all its waiting steps.
import { detached } from '../../common/detached.js';
import { InvalidArgumentError, StepAlreadyCompletedError, WorkflowNotFoundError, WorkflowNotRunningError } from '../../common/errors.js';
import type { WeftLogger } from '../../common/types.js';
import type { StepCompletion, StepProgressKey, StepProgressRepository } from '../../storage/repositories/step-progress.repository.js';

/** How often the steps waiting here look for completions made on other engines. */
export const COMPLETION_POLL_MS = 250;
const MAX_TOKEN_CHARS = 2048;

interface Waiter {
  attempt: number;
  key: StepProgressKey;
  resolve(c: StepCompletion): void;
}

/** A completion token names the step attempt it finishes: workflow, run, seq and attempt. */
export function completionToken(key: StepProgressKey, attempt: number): string {
  return Buffer.from(JSON.stringify([key.workflowId, key.runNumber, key.seq, attempt]), 'utf8').toString('base64url');
}

export function parseCompletionToken(token: unknown): { key: StepProgressKey; attempt: number } {
  const bad = () => new InvalidArgumentError('completionToken', 'is not a token a step with { complete: "external" } was given');
  if (typeof token !== 'string' || token.length === 0 || token.length > MAX_TOKEN_CHARS) throw bad();
  let parts: unknown;
  try {
    parts = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
  } catch {
    throw bad();
  }
  const ints = (v: unknown, min: number) => Number.isInteger(v) && (v as number) >= min;
  if (
    !Array.isArray(parts) ||
    parts.length !== 4 ||
    typeof parts[0] !== 'string' ||
    !ints(parts[1], 1) ||
    !ints(parts[2], 0) ||
    !ints(parts[3], 1)
  ) {
    throw bad();
  }
  return { key: { workflowId: parts[0], runNumber: parts[1] as number, seq: parts[2] as number }, attempt: parts[3] as number };
}

const keyText = (k: StepProgressKey) => `${k.runNumber}:${k.seq}:${k.workflowId}`;

export class ExternalCompletions {
  private readonly waiters = new Map<string, Waiter>();
  private timer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(
    private readonly repo: Pick<StepProgressRepository, 'complete' | 'completions'>,
    private readonly logger: WeftLogger,
    private readonly pollMs = COMPLETION_POLL_MS,
  ) {}

  /** Waits for the completion of this step attempt; never settles once `signal` aborts (the attempt is over). */
  wait(key: StepProgressKey, attempt: number, signal: AbortSignal): Promise<StepCompletion> {
    return new Promise((resolve) => {
      const k = keyText(key);
      const done = () => this.waiters.get(k)?.attempt === attempt && this.waiters.delete(k);
      this.waiters.set(k, { attempt, key, resolve: (c) => (done(), resolve(c)) });
      signal.addEventListener('abort', done, { once: true });
      this.arm();
    });
  }

  /** Stores the outcome once (on any engine), then hands it to the step when it waits here. */
  async complete(token: unknown, completion: StepCompletion): Promise<void> {
    const { key, attempt } = parseCompletionToken(token);
    const out = await this.repo.complete(key, attempt, completion);
    if (out.status === null) throw new WorkflowNotFoundError(key.workflowId);
    if (!out.taken) {
      if (out.status !== 'running' && out.runNumber === key.runNumber && !out.recorded) {
        throw new WorkflowNotRunningError(key.workflowId, out.status);
      }
      throw new StepAlreadyCompletedError(key.workflowId, key.seq, attempt);
    }
    const w = this.waiters.get(keyText(key));
    if (w && w.attempt === attempt) w.resolve(completion);
  }

  close(): void {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  private arm(): void {
    if (this.timer || this.closed || this.waiters.size === 0) return;
    // Armed in no step's context: re-armed from its own poll, it would keep the first waiter's run.
    this.timer = detached(() => setTimeout(() => void this.poll(), this.pollMs));
    this.timer.unref?.();
  }

  private async poll(): Promise<void> {
    const waiting = [...this.waiters.values()];
    try {
      for (const found of await this.repo.completions(waiting.map((w) => w.key))) {
        const w = this.waiters.get(keyText(found));
        if (w && w.attempt === found.attempt) w.resolve(found.completion);
      }
    } catch (err) {
      this.logger.warn(`Could not look for external step completions (tried again in ${this.pollMs} ms): ${(err as Error).message}`);
    } finally {
      this.timer = undefined;
      this.arm();
    }
  }
}
