import type { TransactionOptions } from '../../common/types.js';
import { InvalidWorkflowDeclarationError } from '../nest-errors.js';
import { asStep, type StepMetadata } from './step-call.js';
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
