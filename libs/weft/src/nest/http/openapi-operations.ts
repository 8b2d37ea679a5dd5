// What each Weft route takes and answers, for the OpenAPI document (openapi.ts): by controller
// and handler, so the paths themselves come from the routes Nest registers (openapi.spec and
// test/nest-http-openapi.e2e-spec check that every served route is described, and nothing else).

type Schema = Record<string, unknown>;

export interface OperationSpec {
  summary: string;
  /** Query parameters (path parameters come from the route). */
  query?: Array<{ name: string; description: string; schema?: Schema }>;
  body?: Schema;
  /** The success body (a `$ref`, a schema, or a media type other than JSON); its status is the route's own. */
  ok: { schema?: Schema; media?: string };
  /** Error statuses it may answer, each with the WeftError body (409s of fork with the report). */
  errors: number[];
}

const ref = (name: string): Schema => ({ $ref: `#/components/schemas/${name}` });
const obj = (properties: Record<string, Schema>, required: string[] = []): Schema => ({
  type: 'object',
  properties,
  ...(required.length ? { required } : {}),
  additionalProperties: false,
});
const str: Schema = { type: 'string' };
const any: Schema = {};
const duration: Schema = {
  oneOf: [{ type: 'integer', minimum: 0 }, { type: 'string' }],
  description: "milliseconds, or a string like '10s'",
};

/** The fields of a start's body: POST /workflows (StartRequest) and update-with-start share them. */
const START_PROPERTIES: Record<string, Schema> = {
  type: str,
  input: any,
  workflowId: { type: 'string', minLength: 1, maxLength: 255 },
  idPolicy: { enum: ['return-existing', 'reject-duplicate', 'start-new-if-terminal'] },
  startAt: { type: 'string', format: 'date-time' },
  startAfter: duration,
  executionTimeout: duration,
  attributes: ref('Attributes'),
};
const reason = obj({ reason: { type: 'string', maxLength: 1000 } });
const empty = obj({});
const statusBody = obj({ workflowId: str, status: str }, ['workflowId', 'status']);

export const SCHEMAS: Record<string, Schema> = {
  WeftError: {
    type: 'object',
    description: 'Every refusal: the HTTP status, a stable code (docs/api.md, "Errors") and an actionable message.',
    properties: { statusCode: { type: 'integer' }, code: str, message: str },
    required: ['statusCode', 'code', 'message'],
  },
  ForkRefused: {
    description: 'WEFT_FORK_REFUSED: the kept history does not replay on the current code.',
    allOf: [
      ref('WeftError'),
      {
        type: 'object',
        properties: {
          workflowId: str,
          fromSeq: { type: 'integer' },
          report: obj({ workflowId: str, type: str, ok: { const: false }, error: obj({ name: str, code: str, message: str }) }),
        },
      },
    ],
  },
  Attributes: {
    type: 'object',
    description: 'At most 32 keys (letters, digits, _ - . starting with a letter; 64 characters); strings of 256 characters at most.',
    additionalProperties: { oneOf: [{ type: 'string', maxLength: 256 }, { type: 'number' }, { type: 'boolean' }] },
  },
  StartRequest: obj(START_PROPERTIES, ['type']),
  WorkflowSummary: {
    type: 'object',
    properties: {
      workflowId: str,
      type: str,
      status: str,
      parentId: { type: ['string', 'null'] },
      runNumber: { type: 'integer' },
      createdAt: { type: 'string', format: 'date-time' },
      updatedAt: { type: 'string', format: 'date-time' },
      completedAt: { type: ['string', 'null'], format: 'date-time' },
      attributes: ref('Attributes'),
      input: { description: 'with include=input' },
      output: { description: 'with include=output' },
    },
    required: ['workflowId', 'type', 'status', 'createdAt', 'attributes'],
  },
  ListPage: {
    type: 'object',
    properties: { items: { type: 'array', items: ref('WorkflowSummary') }, nextCursor: { type: ['string', 'null'] } },
    required: ['items', 'nextCursor'],
  },
  WorkflowDescription: {
    type: 'object',
    description: 'engine.describe: the row, its attributes, forkedFrom/retriedFrom and the history.',
    properties: {
      workflowId: str,
      type: str,
      status: str,
      runNumber: { type: 'integer' },
      input: any,
      output: any,
      error: any,
      attributes: ref('Attributes'),
      forkedFrom: { type: ['object', 'null'] },
      retriedFrom: { type: ['object', 'null'] },
      history: { type: 'array', items: { type: 'object' } },
    },
    required: ['workflowId', 'type', 'status', 'history'],
  },
  Schedule: { type: 'object', description: 'engine.schedules.describe (docs/schedules.md).' },
};

const LIST_QUERY = [
  { name: 'status', description: 'statuses, comma-separated or repeated' },
  { name: 'type', description: 'workflow type' },
  { name: 'idPrefix', description: 'ids starting with this text' },
  {
    name: 'attr.<key>',
    description: 'attribute equality, repeatable (any of the values); 42 matches the number or the text, "42" only the text',
  },
  {
    name: 'where',
    description: 'an attribute condition as `weft list --where` takes it: key=v, key>N, key>=N, key<N, key<=N (repeatable)',
  },
  { name: 'order', description: 'newest or oldest (default) first', schema: { enum: ['newest', 'oldest'] } },
  { name: 'include', description: 'input, output (comma-separated)' },
  { name: 'limit', description: '1 to 1000 (default 100)' },
  { name: 'cursor', description: 'nextCursor of the previous page (same order)' },
];

/** By `<Controller class>.<handler>`. */
export const OPERATIONS: Record<string, OperationSpec> = {
  'WeftWorkflowsController.start': {
    summary: 'Start a workflow',
    body: ref('StartRequest'),
    ok: { schema: obj({ workflowId: str }, ['workflowId']) },
    errors: [400, 404, 409, 413, 415],
  },
  'WeftWorkflowsController.updateWithStart': {
    summary: "Start a workflow (or find it by its id policy) and send it an update; the update's result",
    // A start's fields (StartRequest), and the update's.
    body: obj({ ...START_PROPERTIES, update: str, args: any, timeout: duration }, ['type', 'workflowId', 'update']),
    ok: { schema: obj({ workflowId: str, update: str, result: any }, ['workflowId', 'update', 'result']) },
    errors: [400, 404, 409, 413, 415, 422, 504],
  },
  'WeftWorkflowsController.list': {
    summary: 'List workflows by status, type, id prefix and attributes',
    query: LIST_QUERY,
    ok: { schema: ref('ListPage') },
    errors: [400],
  },
  'WeftWorkflowsController.describe': { summary: 'Describe a workflow', ok: { schema: ref('WorkflowDescription') }, errors: [400, 404] },
  'WeftWorkflowsController.ownership': {
    summary: "The workflow's claim: holder, epoch, expiry",
    ok: { schema: { type: 'object' } },
    errors: [400, 404],
  },
  'WeftWorkflowsController.cancel': { summary: 'Cancel a workflow', body: reason, ok: { schema: statusBody }, errors: [400, 404, 409] },
  'WeftWorkflowsController.suspend': {
    summary: 'Suspend a running workflow',
    body: reason,
    ok: { schema: statusBody },
    errors: [400, 404, 409],
  },
  'WeftWorkflowsController.resume': {
    summary: 'Resume a suspended workflow',
    body: empty,
    ok: { schema: statusBody },
    errors: [400, 404, 409],
  },
  'WeftWorkflowsController.fork': {
    summary: 'Fork: a new workflow with the history before fromStep, the rest run on the current code',
    body: obj({ fromStep: { oneOf: [{ type: 'integer', minimum: 0 }, { type: 'string' }] }, workflowId: str }, ['fromStep']),
    ok: { schema: obj({ workflowId: str, forkedFrom: str }, ['workflowId', 'forkedFrom']) },
    errors: [400, 404, 409],
  },
  'WeftWorkflowsController.retry': {
    summary: 'Retry a failed workflow from its failed step, as its next run',
    body: empty,
    ok: { schema: statusBody },
    errors: [400, 404, 409],
  },
  'WeftWorkflowsController.result': {
    summary: 'The outcome once ended (200), or 202 { done: false } after ?timeout=',
    query: [{ name: 'timeout', description: 'how long to wait, at most 60s (default 0)' }],
    ok: { schema: { type: 'object', properties: { workflowId: str, done: { type: 'boolean' }, status: str, output: any, error: any } } },
    errors: [400, 404],
  },
  'WeftMessagesController.signal': {
    summary: 'Send a signal',
    body: obj({ payload: any }),
    ok: { schema: { type: 'object' } },
    errors: [400, 404, 409, 413],
  },
  'WeftMessagesController.update': {
    summary: "Send an update and wait for its handler's result",
    body: obj({ args: any, timeout: duration }),
    ok: { schema: { type: 'object' } },
    errors: [400, 404, 409, 422, 504],
  },
  'WeftMessagesController.query': {
    summary: 'Query a workflow (args in the body)',
    body: obj({ args: any }),
    ok: { schema: { type: 'object' } },
    errors: [400, 404, 409],
  },
  'WeftMessagesController.queryNoArgs': {
    summary: 'Query a workflow without args',
    ok: { schema: { type: 'object' } },
    errors: [400, 404, 409],
  },
  'WeftMessagesController.completeStep': {
    summary: "Complete a step run with { complete: 'external' } (its body's completionToken), once",
    body: obj({ token: str, result: any }, ['token']),
    ok: { schema: obj({ workflowId: str, completed: { type: 'boolean' } }, ['workflowId', 'completed']) },
    errors: [400, 404, 409, 413],
  },
  'WeftMessagesController.failStep': {
    summary: "Fail the attempt of a step run with { complete: 'external' } (retried per its policy unless nonRetryable), once",
    body: obj(
      {
        token: str,
        error: obj(
          { message: { type: 'string', maxLength: 1000 }, name: str, code: str, details: any, nonRetryable: { type: 'boolean' } },
          ['message'],
        ),
      },
      ['token', 'error'],
    ),
    ok: { schema: obj({ workflowId: str, failed: { type: 'boolean' } }, ['workflowId', 'failed']) },
    errors: [400, 404, 409, 413],
  },
  'WeftMessagesController.event': {
    summary: 'The value of an event (ctx.setEvent), waiting for it up to ?timeout=',
    query: [{ name: 'timeout', description: 'how long to wait for it, at most 60s (default 0)' }],
    ok: { schema: obj({ workflowId: str, key: str, value: any }, ['workflowId', 'key', 'value']) },
    errors: [400, 404],
  },
  'WeftMessagesController.stream': {
    summary: 'A stream (ctx.writeStream) as server-sent events: `entry` events (id = offset), then `end`',
    query: [{ name: 'from', description: 'the first offset to send (inclusive); or the Last-Event-ID header' }],
    ok: { media: 'text/event-stream' },
    errors: [400, 404],
  },
  'WeftTimelineController.timeline': {
    summary: "The dashboard's timeline of a workflow",
    query: [{ name: 'limit', description: 'operations shown' }],
    ok: { schema: { type: 'object' } },
    errors: [400, 404],
  },
  'WeftEnginesController.engines': { summary: 'Engines and the claims each holds', ok: { schema: { type: 'object' } }, errors: [400] },
  'WeftQueuesController.queues': { summary: 'Declared queues and their figures', ok: { schema: { type: 'object' } }, errors: [400] },
  'WeftQueuesController.partitions': {
    summary: "A partitioned queue's keys with work, busiest first (enqueued, running, oldest enqueued's age)",
    query: [{ name: 'limit', description: 'keys listed, 1 to 100 (default 20)' }],
    ok: {
      schema: obj(
        {
          serverTime: { type: 'string', format: 'date-time' },
          queue: str,
          partitioned: { type: 'boolean' },
          keysWithWork: { type: 'integer' },
          partitions: {
            type: 'array',
            items: obj(
              {
                partitionKey: str,
                enqueued: { type: 'integer' },
                running: { type: 'integer' },
                oldestEnqueuedAt: { type: ['string', 'null'], format: 'date-time' },
                oldestEnqueuedAgeMs: { type: ['integer', 'null'] },
              },
              ['partitionKey', 'enqueued', 'running', 'oldestEnqueuedAt', 'oldestEnqueuedAgeMs'],
            ),
          },
        },
        ['serverTime', 'queue', 'partitioned', 'keysWithWork', 'partitions'],
      ),
    },
    errors: [400],
  },
  'WeftSchedulesController.list': {
    summary: 'List schedules',
    query: [
      { name: 'after', description: 'schedule id of the previous page' },
      { name: 'limit', description: '1 to 1000' },
    ],
    ok: { schema: { type: 'array', items: ref('Schedule') } },
    errors: [400],
  },
  'WeftSchedulesController.create': {
    summary: 'Create a schedule',
    body: { type: 'object' },
    ok: { schema: ref('Schedule') },
    errors: [400, 404, 409],
  },
  'WeftSchedulesController.describe': { summary: 'Describe a schedule', ok: { schema: ref('Schedule') }, errors: [400, 404] },
  'WeftSchedulesController.update': {
    summary: 'Change a schedule',
    body: { type: 'object' },
    ok: { schema: ref('Schedule') },
    errors: [400, 404],
  },
  'WeftSchedulesController.pause': { summary: 'Pause a schedule', body: empty, ok: { schema: ref('Schedule') }, errors: [400, 404] },
  'WeftSchedulesController.unpause': { summary: 'Unpause a schedule', body: empty, ok: { schema: ref('Schedule') }, errors: [400, 404] },
  'WeftSchedulesController.trigger': {
    summary: "Start one extra run of a schedule's workflow",
    body: empty,
    ok: { schema: obj({ workflowId: str }) },
    errors: [400, 404],
  },
  'WeftSchedulesController.remove': { summary: 'Delete a schedule', body: empty, ok: {}, errors: [400, 404] },
  'WeftOpenApiController.document': { summary: 'This document', ok: { schema: { type: 'object' } }, errors: [] },
  'WeftDashboardController.page': { summary: 'The dashboard page', ok: { media: 'text/html' }, errors: [] },
  'WeftDashboardController.asset': { summary: "The dashboard's scripts and styles", ok: { media: 'text/javascript' }, errors: [404] },
  'WeftMetricsController.scrape': { summary: 'Prometheus metrics', ok: { media: 'text/plain' }, errors: [] },
};
