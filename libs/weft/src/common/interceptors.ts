/**
 * Interceptors (docs/interceptors.md): hooks around a workflow's start, its run, each step
 * attempt and each signal sent, in the shape of Temporal's (`(input, next) => next(input)`). The
 * first interceptor of the list is the outermost: its hook runs first and its `next` calls the
 * second's. Inputs are read-only; a hook passes a changed copy to `next`.
 */

/** A workflow's headers: a plain object of strings, stored with the workflow (a payload: the codec encodes it). */
export type WeftHeaders = Readonly<Record<string, string>>;

export interface StartInput {
  readonly workflowType: string;
  /** The id asked for, if any (a generated one is known only from `next`'s result). */
  readonly workflowId?: string;
  readonly input: unknown;
  /** Empty at the first hook; what the last hook passes to `next` is stored with the workflow. */
  readonly headers: WeftHeaders;
}

export interface RunInput {
  readonly workflowType: string;
  readonly workflowId: string;
  readonly runNumber: number;
  readonly input: unknown;
  /** As stored at the start (the same on every engine, after a takeover or a replay). */
  readonly headers: WeftHeaders;
}

export interface StepInput {
  readonly workflowType: string;
  readonly workflowId: string;
  readonly runNumber: number;
  readonly stepName: string;
  readonly attempt: number;
  /** The workflow's, as stored at its start. */
  readonly headers: WeftHeaders;
}

export interface SignalInput {
  readonly workflowId: string;
  readonly signalName: string;
  readonly payload: unknown;
  /** Empty at the first hook; seen by the hooks after it, not stored (docs/interceptors.md). */
  readonly headers: WeftHeaders;
}

/** Each hook is optional; one that is absent costs nothing. */
export interface WeftInterceptor {
  /** Around engine.start, signalWithStart and schedule fires (not children, which inherit). Resolves with the workflow id. */
  start?(input: StartInput, next: (input: StartInput) => Promise<string>): Promise<string>;
  /** Around the workflow's run() on every engine that runs or replays it. Resolves with its output. */
  run?(input: RunInput, next: (input: RunInput) => Promise<unknown>): Promise<unknown>;
  /** Around each attempt of a step body, inside currentStep(). Resolves with the body's result. */
  step?(input: StepInput, next: (input: StepInput) => Promise<unknown>): Promise<unknown>;
  /** Around engine.signal (and handle.signal). */
  signal?(input: SignalInput, next: (input: SignalInput) => Promise<void>): Promise<void>;
}
