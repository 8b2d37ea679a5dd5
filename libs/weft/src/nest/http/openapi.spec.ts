import { weftControllers } from './controllers.js';
import { openApiDocument, routesOf } from './openapi.js';
import { OPERATIONS } from './openapi-operations.js';

describe('the OpenAPI document', () => {
  const controllers = weftControllers({ http: true, metrics: true, dashboard: true });

  it('describes every route of every Weft controller, and nothing else', () => {
    const routes = routesOf(controllers);
    expect(new Set(routes.map((r) => r.key))).toEqual(new Set(Object.keys(OPERATIONS)));
    const doc = openApiDocument(controllers) as { openapi: string; paths: Record<string, Record<string, unknown>> };
    expect(doc.openapi).toBe('3.1.0');
    const described = Object.entries(doc.paths).flatMap(([p, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${p}`));
    expect(described.sort()).toEqual(routes.map((r) => `${r.method.toUpperCase()} ${r.path.replace(/:(\w+)/g, '{$1}')}`).sort());
  });

  it("uses each route's own status, path parameters, and the error body", () => {
    const doc = openApiDocument(controllers) as {
      paths: Record<string, Record<string, { responses: Record<string, unknown>; parameters?: unknown[] }>>;
    };
    expect(Object.keys(doc.paths['/weft/workflows'].post.responses)).toContain('201');
    expect(Object.keys(doc.paths['/weft/workflows/{id}/signal/{name}'].post.responses)).toContain('202');
    expect(doc.paths['/weft/workflows/{id}/signal/{name}'].post.parameters).toEqual([
      expect.objectContaining({ name: 'id', in: 'path' }),
      expect.objectContaining({ name: 'name', in: 'path' }),
    ]);
    expect(JSON.stringify(doc.paths['/weft/workflows/{id}/fork'].post.responses['409'])).toContain('ForkRefused');
    expect(doc.paths['/weft/workflows'].get.parameters).toEqual(
      expect.arrayContaining([expect.objectContaining({ name: 'attr.<key>', in: 'query' })]),
    );
  });

  it('a route without a description is an error, not a silent gap', () => {
    const bare = class WeftBareController {};
    Reflect.defineMetadata('path', 'x', bare);
    const handler = function nothing() {};
    Reflect.defineMetadata('method', 0, handler);
    Reflect.defineMetadata('path', '/', handler);
    Object.defineProperty(bare.prototype, 'nothing', { value: handler });
    expect(() => openApiDocument([bare])).toThrow(/WeftBareController.nothing is not described|not described/);
  });
});
