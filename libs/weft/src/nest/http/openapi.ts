// The OpenAPI 3.1 document of the Weft routes (docs/api.md), served at `<prefix>/openapi.json`
// behind the same guards. Built by hand from the controllers' own route metadata (the paths,
// methods and statuses Nest registers) and openapi-operations.ts (what each takes and answers):
// no @nestjs/swagger dependency, and a route added without a description fails openapi.spec.
import { Get, Req, RequestMethod, UseFilters, type Type } from '@nestjs/common';
import { HTTP_CODE_METADATA, METHOD_METADATA, PATH_METADATA } from '@nestjs/common/constants.js';
import { OPERATIONS, SCHEMAS, type OperationSpec } from './openapi-operations.js';
import { WeftExceptionFilter } from './weft-exception.filter.js';

const VERSION = '0.1.0';
const REASONS: Record<number, string> = {
  400: 'Bad input (WEFT_INVALID_ARGUMENT and the other input codes)',
  401: "Refused by the app's guards",
  403: "Refused by the app's guards, or a cross-origin write (WEFT_CROSS_ORIGIN_REFUSED)",
  404: 'No such workflow, type, schedule or handler',
  409: 'The state does not allow it',
  413: 'Payload or request too large',
  415: 'Not application/json',
  422: 'The update handler failed',
  503: 'The database or the engine is unavailable',
  504: 'The update was not answered in time',
};

export interface RouteOf {
  /** `<Controller class>.<handler>`, the key of OPERATIONS. */
  key: string;
  method: string;
  /** As Nest registers it, e.g. `/weft/workflows/:id/cancel`. */
  path: string;
  /** The route's own status (@HttpCode), else Nest's default for its method. */
  status: number;
}

const normal = (path: string) => `/${path}`.replace(/\/+/g, '/').replace(/(.)\/$/, '$1');

/** Every route of the controllers, read from Nest's metadata. */
export function routesOf(controllers: Type[]): RouteOf[] {
  const out: RouteOf[] = [];
  for (const controller of controllers) {
    const base = String(Reflect.getMetadata(PATH_METADATA, controller) ?? '');
    // The routed subclass (controllers.ts) keeps its base class's name.
    for (let proto = controller.prototype as object | null; proto && proto !== Object.prototype; proto = Object.getPrototypeOf(proto)) {
      for (const name of Object.getOwnPropertyNames(proto)) {
        const handler = Object.getOwnPropertyDescriptor(proto, name)?.value as object | undefined;
        if (typeof handler !== 'function') continue;
        const method = Reflect.getMetadata(METHOD_METADATA, handler) as RequestMethod | undefined;
        if (method === undefined) continue;
        const verb = RequestMethod[method].toLowerCase();
        const status = (Reflect.getMetadata(HTTP_CODE_METADATA, handler) as number | undefined) ?? (verb === 'post' ? 201 : 200);
        out.push({
          key: `${controller.name}.${name}`,
          method: verb,
          path: normal(`${base}/${String(Reflect.getMetadata(PATH_METADATA, handler))}`),
          status,
        });
      }
    }
  }
  return out;
}

function operation(route: RouteOf, spec: OperationSpec): Record<string, unknown> {
  const params = [...route.path.matchAll(/:(\w+)/g)].map((m) => ({ name: m[1], in: 'path', required: true, schema: { type: 'string' } }));
  for (const q of spec.query ?? [])
    params.push({
      name: q.name,
      in: 'query',
      required: false,
      schema: q.schema ?? { type: 'string' },
      description: q.description,
    } as never);
  const ok = spec.ok.media
    ? { description: 'OK', content: { [spec.ok.media]: { schema: { type: 'string' } } } }
    : spec.ok.schema
      ? { description: 'OK', content: { 'application/json': { schema: spec.ok.schema } } }
      : { description: 'No content' };
  const responses: Record<string, unknown> = { [String(route.status)]: ok };
  if (route.key === 'WeftWorkflowsController.result') responses['202'] = { description: 'Not ended yet: { workflowId, done: false }' };
  for (const status of [...spec.errors, 401, 403, 503]) {
    const schema =
      status === 409 && route.key.endsWith('.fork')
        ? { oneOf: [{ $ref: '#/components/schemas/ForkRefused' }, { $ref: '#/components/schemas/WeftError' }] }
        : { $ref: '#/components/schemas/WeftError' };
    responses[String(status)] = { description: REASONS[status] ?? 'Error', content: { 'application/json': { schema } } };
  }
  return {
    operationId: route.key.replace('Controller.', '.').replace(/^Weft/, ''),
    summary: spec.summary,
    ...(params.length ? { parameters: params } : {}),
    ...(spec.body ? { requestBody: { required: false, content: { 'application/json': { schema: spec.body } } } } : {}),
    responses,
  };
}

/** The document for these controllers; `server` is where the app mounts them ('' for none). Throws for a route without a description. */
export function openApiDocument(controllers: Type[], server = ''): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routesOf(controllers)) {
    const spec = OPERATIONS[route.key];
    if (!spec)
      throw new Error(
        `OpenAPI: the route ${route.method.toUpperCase()} ${route.path} (${route.key}) is not described in openapi-operations.ts`,
      );
    const path = route.path.replace(/:(\w+)/g, '{$1}');
    (paths[path] ??= {})[route.method] = operation(route, spec);
  }
  return {
    openapi: '3.1.0',
    info: { title: 'Weft HTTP API', version: VERSION, description: 'Durable workflows recorded in PostgreSQL (docs/api.md).' },
    servers: [{ url: server || '/' }],
    paths,
    components: { schemas: SCHEMAS },
  };
}

/** Serves the document of `controllers` (filled in by weftControllers, this one included). */
export function openApiController(controllers: Type[]): Type {
  @UseFilters(WeftExceptionFilter)
  class WeftOpenApiController {
    private readonly docs = new Map<string, Record<string, unknown>>();

    /** The server is the mount the request came through (a global prefix, a version), so the paths resolve. */
    @Get()
    document(@Req() req: { originalUrl?: string; url?: string }): Record<string, unknown> {
      const path = normal(String(req.originalUrl ?? req.url ?? '').split(/[?#]/)[0]);
      const own = normal(String(Reflect.getMetadata(PATH_METADATA, this.constructor) ?? ''));
      const mount = path.toLowerCase().endsWith(own.toLowerCase()) ? path.slice(0, path.length - own.length) : '';
      let doc = this.docs.get(mount);
      if (!doc) this.docs.set(mount, (doc = openApiDocument(controllers, mount)));
      return doc;
    }
  }
  return WeftOpenApiController;
}
