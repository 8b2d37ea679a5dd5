import { currentWorkflowContext } from '../../engine/als.js';
import type { TransactionOptions } from '../../common/types.js';
import { InvalidWorkflowDeclarationError } from '../nest-errors.js';
import { insideStepBody } from '../step-scope.js';
import { WEFT_STEP_METADATA } from '../weft.constants.js';

export interface StepDecoratorOptions extends TransactionOptions {
  /** Recorded operation name (default `${ClassName}.${methodName}`); keep it stable across deploys. */
  name?: string;
  /**
   * A transactional step (ctx.transaction): the method runs in a transaction whose writes commit
   * with the step's record; it reaches the manager through `currentStep().manager` or the ambient
   * transaction of @nestjs-cls/transactional or typeorm-transactional (docs/transactions.md).
   */
  transaction?: boolean;
}

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
 * recorded step `stepName`; elsewhere a plain call. @Step() wraps methods with it, and so do the
 * step doubles (a provider replaced with overrideProvider, the testing kit's mockStep).
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

/**
 * Makes a provider method a durable step when called inside a workflow: its result is recorded
 * and replay returns it without calling the method again. Outside a workflow, or inside another
 * step's body, it is a plain call. Arguments are not part of the record: call it deterministically.
 */
export function Step(options: StepDecoratorOptions = {}): MethodDecorator {
  return (target, propertyKey, descriptor) => {
    const original = descriptor.value as unknown;
    const className = typeof target === 'function' ? target.name : target.constructor.name;
    if (typeof original !== 'function') {
      throw new InvalidWorkflowDeclarationError(
        className,
        `@Step() is on ${String(propertyKey)}, which is not a method (a getter, setter or field). Put @Step() on a method.`,
      );
    }
    const { name, transaction, isolation, ...stepOptions } = options;
    const stepName = name ?? `${className}.${String(propertyKey)}`;
    const tx = transaction ? { isolation } : undefined;
    const wrapped = asStep(stepName, stepOptions, original as AnyMethod, tx);
    // Keep metadata other decorators put on the original function (routes, handlers, ...).
    for (const key of Reflect.getOwnMetadataKeys(original)) Reflect.defineMetadata(key, Reflect.getOwnMetadata(key, original), wrapped);
    Object.defineProperty(wrapped, 'name', { value: (original as AnyMethod).name });
    Reflect.defineMetadata(WEFT_STEP_METADATA, { name: stepName, options: stepOptions, transaction: tx } satisfies StepMetadata, wrapped);
    (descriptor as TypedPropertyDescriptor<unknown>).value = wrapped;
    return descriptor;
  };
}
