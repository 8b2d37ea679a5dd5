import { WeftError } from '../common/errors.js';

/** Two @Workflow classes (or a class and a manual registration) claim the same workflow name. */
export class DuplicateWorkflowNameError extends WeftError {
  readonly code = 'WEFT_DUPLICATE_WORKFLOW_NAME';
  constructor(
    readonly workflowName: string,
    readonly classNames: string[],
  ) {
    super(
      `Workflow name "${workflowName}" is used by more than one workflow (${classNames.join(', ')}). Give each @Workflow a unique name.`,
    );
  }
}

/** One workflow class declares two handlers of the same kind with the same name. */
export class DuplicateHandlerNameError extends WeftError {
  readonly code = 'WEFT_DUPLICATE_HANDLER_NAME';
  constructor(
    readonly className: string,
    readonly kind: 'signal' | 'update' | 'query',
    readonly handlerName: string,
    readonly methodNames: string[],
  ) {
    super(`${className} has more than one ${kind} handler named "${handlerName}" (methods ${methodNames.join(', ')}). Keep one.`);
  }
}

export class WorkflowRunMissingError extends WeftError {
  readonly code = 'WEFT_WORKFLOW_RUN_MISSING';
  constructor(readonly className: string) {
    super(`${className} is decorated with @Workflow but has no run(ctx, input) method.`);
  }
}

/** Workflow instances are created per execution outside any request, so request scope cannot apply. */
export class ScopedWorkflowError extends WeftError {
  readonly code = 'WEFT_WORKFLOW_SCOPE';
  constructor(readonly className: string) {
    super(
      `${className} is request-scoped (or depends on a request-scoped provider). Workflow classes run outside any request: make it and its dependencies singleton or transient.`,
    );
  }
}

/** A decorator was given something it cannot use (an empty name, a non-method target). */
export class InvalidWorkflowDeclarationError extends WeftError {
  readonly code = 'WEFT_INVALID_WORKFLOW_DECLARATION';
  constructor(
    readonly className: string,
    detail: string,
  ) {
    super(`${className}: ${detail}`);
  }
}

/** A constructor dependency of a workflow class could not be resolved at start-up. */
export class WorkflowDependencyError extends WeftError {
  readonly code = 'WEFT_WORKFLOW_DEPENDENCY';
  constructor(
    readonly className: string,
    readonly dependency: string,
    detail: string,
    options?: { cause?: unknown },
  ) {
    super(
      `${className}: cannot resolve dependency ${dependency} (${detail}). Provide it in, or export it to, the workflow's module.`,
      options,
    );
  }
}
