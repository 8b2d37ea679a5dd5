import { currentWorkflowContext } from '../../engine/als.js';
import type { StepOptions, TransactionOptions } from '../../common/types.js';
import { insideStepBody } from '../step-scope.js';
import { WEFT_STEP_METADATA } from '../weft.constants.js';

type AnyMethod = (...args: unknown[]) => unknown;

/** What @Step() recorded on a method: its step name and options, and whether it is transactional. */
export interface StepMetadata {
  name: string;
  options: StepOptions;
  /** A transactional step (`@Step({ transaction: true })`), with its isolation. */
  transaction?: { isolation?: TransactionOptions['isolation'] };
}

/**
 * `body` as a step method: inside a workflow (and not inside another step's body) a call is the
 * recorded step `stepName` (a transactional one when `transaction` is given); elsewhere a plain
 * call. @Step() wraps methods with it, and so do the step doubles (a provider replaced with
 * overrideProvider, the testing kit's mockStep).
 */
export function asStep(stepName: string, options: StepOptions, body: AnyMethod, transaction?: StepMetadata['transaction']): AnyMethod {
  return function (this: unknown, ...args: unknown[]): unknown {
    const ctx = currentWorkflowContext();
    if (!ctx || insideStepBody()) return body.apply(this, args);
    if (transaction) return ctx.transaction(stepName, () => body.apply(this, args), { ...options, isolation: transaction.isolation });
    return ctx.step(stepName, () => body.apply(this, args), options);
  };
}

/** The @Step() metadata of `Class.prototype[method]`, or undefined when it is not a step. */
export function stepMetadataOf(Class: abstract new (...args: never[]) => unknown, method: string | symbol): StepMetadata | undefined {
  const fn = (Class.prototype as Record<string | symbol, unknown>)[method];
  return typeof fn === 'function' ? (Reflect.getMetadata(WEFT_STEP_METADATA, fn) as StepMetadata | undefined) : undefined;
}
