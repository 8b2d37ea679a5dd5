import type { StepArgs } from '../../common/types.js';
import type { StepProgress } from './step-progress.js';

/**
 * What a step body gets (and currentStep() returns) for one attempt. `heartbeat` and
 * `lastHeartbeat` are getters on the prototype, so a body that destructures them gets a working
 * function, and a step that never beats allocates nothing for them.
 */
export class AttemptArgs implements StepArgs {
  manager?: StepArgs['manager'];
  private beat: ((details?: unknown) => void) | undefined;

  constructor(
    readonly attempt: number,
    readonly idempotencyKey: string,
    readonly signal: AbortSignal,
    private readonly progress?: StepProgress,
    readonly completionToken?: string,
  ) {}

  /** Saves progress (docs/long-steps.md): a retry, here or on the engine that takes over, reads it as `lastHeartbeat`. */
  get heartbeat(): (details?: unknown) => void {
    return (this.beat ??= (details?: unknown) => this.progress?.beat(this.attempt, details));
  }

  /** The last details a heartbeat saved: this attempt's, an earlier one's, or an earlier owner's; undefined when none. */
  get lastHeartbeat(): unknown {
    return this.progress?.lastHeartbeat;
  }
}
