// Which paths are Weft's: the route templates of Weft's controllers, and the bases they are served
// under in the app (after a global prefix, a URI version or a RouterModule path, if any).
import { RequestMethod, type Type } from '@nestjs/common';
import { METHOD_METADATA, PATH_METADATA } from '@nestjs/common/constants.js';

export interface WeftController {
  /** The controller's path, e.g. 'weft/workflows'. */
  base: string;
  /** Each route's path under it, e.g. 'weft/workflows/:id/cancel'. */
  templates: string[];
  /** Whether a route takes a body (a method other than GET): Weft reads the bodies under this base. */
  readsBodies: boolean;
}

const normal = (path: string) => `/${path}`.replace(/\/+/g, '/').replace(/(.)\/$/, '$1');

/** Read from the controllers' route metadata, so a new route is covered without a list to update. */
export function weftControllerRoutes(controllers: Type[]): WeftController[] {
  return controllers.map((controller) => {
    const base = normal(String(Reflect.getMetadata(PATH_METADATA, controller)));
    const templates: string[] = [];
    let readsBodies = false;
    for (let proto = controller.prototype as object | null; proto && proto !== Object.prototype; proto = Object.getPrototypeOf(proto)) {
      for (const name of Object.getOwnPropertyNames(proto)) {
        const handler = Object.getOwnPropertyDescriptor(proto, name)?.value as object | undefined;
        if (typeof handler !== 'function') continue;
        const method = Reflect.getMetadata(METHOD_METADATA, handler) as RequestMethod | undefined;
        if (method === undefined) continue;
        templates.push(normal(`${base}/${String(Reflect.getMetadata(PATH_METADATA, handler))}`));
        if (method !== RequestMethod.GET) readsBodies = true;
      }
    }
    return { base, templates, readsBodies };
  });
}

/**
 * The full bases (mount + controller path) of the controllers, from the paths the app routes:
 * a mount counts for a controller when every one of its templates is served under it.
 */
export function servedBases(routePaths: string[], controllers: WeftController[]): { all: string[]; bodies: string[] } {
  const served = new Set(routePaths.map(normal));
  const all = new Set<string>();
  const bodies = new Set<string>();
  for (const { base, templates, readsBodies } of controllers) {
    const first = templates[0];
    if (first === undefined) continue;
    for (const path of served) {
      if (!path.endsWith(first)) continue; // templates start with '/': a whole-segment match
      const mount = path.slice(0, path.length - first.length);
      const full = normal(mount + base);
      if (full === '/' || !templates.every((t) => served.has(normal(mount + t)))) continue; // never the whole app
      all.add(full);
      if (readsBodies) bodies.add(full);
    }
  }
  return { all: [...all], bodies: [...bodies] };
}

/** Whether the request path (no query) is one of `bases` or under it; Express matches without case by default. */
export function underBases(url: string, bases: string[]): boolean {
  const path = normal(url.split('?')[0]).toLowerCase();
  return bases.some((base) => {
    const b = base.toLowerCase();
    return path === b || path.startsWith(`${b}/`);
  });
}
