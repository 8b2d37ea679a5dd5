/** Metadata keys and injection tokens of the Nest adapter. */
export const WEFT_WORKFLOW_METADATA = 'weft:workflow';
export const WEFT_SIGNAL_HANDLER_METADATA = 'weft:signal-handler';
export const WEFT_UPDATE_HANDLER_METADATA = 'weft:update-handler';
/** On an update validator method (`@UpdateValidator(name)`): the update's name. */
export const WEFT_UPDATE_VALIDATOR_METADATA = 'weft:update-validator';
/** On an update handler method: its `validate` option (`@UpdateHandler(name, { validate })`). */
export const WEFT_UPDATE_VALIDATE_OPTION_METADATA = 'weft:update-validate';
export const WEFT_QUERY_HANDLER_METADATA = 'weft:query-handler';
export const WEFT_STEP_METADATA = 'weft:step';
export const WEFT_SCHEDULE_METADATA = 'weft:schedule';

/** The engine's opened database (`engine.database`), for apps that want to query it. */
export const WEFT_DATABASE = Symbol('WEFT_DATABASE');

/** `http` and `metrics` as given beside forRoot/forRootAsync: routes are fixed before any factory runs. */
export const WEFT_MODULE_EXTRAS = Symbol('WEFT_MODULE_EXTRAS');

/** The route table of the Weft controllers this module defines (nest/http/weft-routes.ts). */
export const WEFT_HTTP_ROUTES = Symbol('WEFT_HTTP_ROUTES');

export const DEFAULT_HTTP_PREFIX = 'weft';

export type HandlerKind = 'signal' | 'update' | 'query';

export const HANDLER_METADATA: Record<HandlerKind, string> = {
  signal: WEFT_SIGNAL_HANDLER_METADATA,
  update: WEFT_UPDATE_HANDLER_METADATA,
  query: WEFT_QUERY_HANDLER_METADATA,
};
