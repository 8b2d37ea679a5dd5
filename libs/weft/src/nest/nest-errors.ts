import { ErrorCategory, WeftError } from '../common/errors.js';

/** Two `@Workflow` classes (or a class and a manual registration) claim the same workflow name. */
export class DuplicateWorkflowNameError extends WeftError {
  static readonly code = 'WEFT_DUPLICATE_WORKFLOW_NAME';
  static readonly category = ErrorCategory.Internal;
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
  static readonly code = 'WEFT_DUPLICATE_HANDLER_NAME';
  static readonly category = ErrorCategory.Internal;
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
  static readonly code = 'WEFT_WORKFLOW_RUN_MISSING';
  static readonly category = ErrorCategory.Internal;
  constructor(readonly className: string) {
    super(`${className} is decorated with @Workflow but has no run(ctx, input) method. Add an async run(ctx, input), or remove @Workflow.`);
  }
}

/** Workflow instances are created per execution outside any request, so request scope cannot apply. */
export class ScopedWorkflowError extends WeftError {
  static readonly code = 'WEFT_WORKFLOW_SCOPE';
  static readonly category = ErrorCategory.Internal;
  constructor(readonly className: string) {
    super(
      `${className} is request-scoped (or depends on a request-scoped provider). Workflow classes run outside any request: make it and its dependencies singleton or transient.`,
    );
  }
}

/** A decorator was given something it cannot use (an empty name, a non-method target). */
export class InvalidWorkflowDeclarationError extends WeftError {
  static readonly code = 'WEFT_INVALID_WORKFLOW_DECLARATION';
  static readonly category = ErrorCategory.Internal;
  constructor(
    readonly className: string,
    detail: string,
  ) {
    super(`${className}: ${detail}`);
  }
}

/** A constructor dependency of a workflow class could not be resolved at start-up. */
export class WorkflowDependencyError extends WeftError {
  static readonly code = 'WEFT_WORKFLOW_DEPENDENCY';
  static readonly category = ErrorCategory.Internal;
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

/**
 * forRootAsync's factory returned `http` or `metrics`: routes and their guards are fixed when the
 * module is defined, before the factory runs, so they would be ignored (guards included, leaving
 * the routes unguarded). They go beside useFactory.
 */
export class ModuleOptionMisplacedError extends WeftError {
  static readonly code = 'WEFT_MODULE_OPTION_MISPLACED';
  static readonly category = ErrorCategory.Internal;
  constructor(
    /** The options the factory returned that belong beside useFactory: 'http', 'metrics', 'dashboard'. */
    readonly options: string[],
    /** Whether any of them carried guards. */
    readonly hadGuards: boolean,
  ) {
    const names = options.map((o) => `"${o}"`).join(' and ');
    super(
      `${names} returned by WeftModule.forRootAsync()'s useFactory would be ignored: routes${hadGuards ? ', and so these guards,' : ' and their guards'} ` +
        `are fixed when the module is defined, before the factory runs. Move ${options.join(' and ')} out of the factory's result, ` +
        `beside useFactory: WeftModule.forRootAsync({ ${options.join(', ')}, useFactory }). ` +
        `(The factory may return metrics: { registry } alone, or the very value given beside useFactory.)`,
    );
  }
}

/** A request under the dashboard's asset path for a file the package does not ship. */
export class DashboardAssetNotFoundError extends WeftError {
  static readonly code = 'WEFT_DASHBOARD_ASSET_NOT_FOUND';
  static readonly category = ErrorCategory.NotFound;
  constructor(readonly file: string) {
    super(`The Weft dashboard has no asset "${file.slice(0, 100)}"; open the dashboard page itself (GET /<dashboard path>).`);
  }
}

/** A request body larger than Weft's HTTP API reads (413): `maxPayloadBytes` plus room for the fields around it. */
export class RequestTooLargeError extends WeftError {
  static readonly code = 'WEFT_REQUEST_TOO_LARGE';
  static readonly category = ErrorCategory.Input;
  static readonly httpStatus = 413;
  /** `limitBytes` null: the app's own body parser refused it (on a Weft route that reads no body). */
  constructor(readonly limitBytes: number | null) {
    super(
      limitBytes === null
        ? 'The request body is larger than the app accepts; this Weft route reads no body, send none.'
        : `The request body is larger than ${limitBytes} bytes, the most the Weft HTTP API reads (maxPayloadBytes plus 64 KiB for the other fields). Send a smaller payload, or raise maxPayloadBytes.`,
    );
  }
}

/** A request body in a type or encoding other than JSON in UTF-8 (415). */
export class UnsupportedMediaTypeError extends WeftError {
  static readonly code = 'WEFT_UNSUPPORTED_MEDIA_TYPE';
  static readonly category = ErrorCategory.Input;
  static readonly httpStatus = 415;
  constructor(readonly detail: string) {
    super(`The Weft HTTP API reads JSON bodies only: ${detail}. Send the body as UTF-8 JSON with Content-Type: application/json.`);
  }
}

/** A method and path under a Weft route base that no Weft route serves (404). */
export class RouteNotFoundError extends WeftError {
  static readonly code = 'WEFT_ROUTE_NOT_FOUND';
  static readonly category = ErrorCategory.NotFound;
  constructor(readonly method: string) {
    super(`No Weft route serves ${method.slice(0, 16)} at this path; see the HTTP API in docs/api.md.`);
  }
}

/**
 * A state-changing request to a Weft route from a page of another origin (its `Sec-Fetch-Site` or
 * `Origin` says so): a cookie it carries must not act for that page (403).
 */
export class CrossOriginRequestRefusedError extends WeftError {
  static readonly code = 'WEFT_CROSS_ORIGIN_REFUSED';
  static readonly category = ErrorCategory.Input;
  static readonly httpStatus = 403;
  constructor(readonly evidence: string) {
    super(
      `Refused a state-changing request from another origin (${evidence.slice(0, 200)}). ` +
        'Call the Weft routes from the dashboard itself, or from a script without a browser (x-api-key and JSON).',
    );
  }
}
