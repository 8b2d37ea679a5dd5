// The routes the Weft module registered in an app, read from Nest's container: suites that check
// something of every Weft route (guards, the cross-origin check) enumerate them here, so a route
// added later is covered without editing the suite.
import { INestApplication, RequestMethod } from '@nestjs/common';
import { METHOD_METADATA, PATH_METADATA } from '@nestjs/common/constants.js';
import { MetadataScanner, ModulesContainer } from '@nestjs/core';
import { WeftModule } from '@weft/nest';

export interface Route {
  method: string;
  path: string;
}

/** Every route of every controller the Weft module registered in this app. */
export function weftRoutes(app: INestApplication): Route[] {
  const scanner = new MetadataScanner();
  const routes: Route[] = [];
  for (const module of app.get(ModulesContainer).values()) {
    if (module.metatype !== WeftModule) continue;
    for (const wrapper of module.controllers.values()) {
      const controller = wrapper.metatype as { prototype: Record<string, unknown> };
      const base = String(Reflect.getMetadata(PATH_METADATA, controller));
      for (const name of scanner.getAllMethodNames(controller.prototype)) {
        const handler = controller.prototype[name] as object;
        const method = Reflect.getMetadata(METHOD_METADATA, handler) as RequestMethod | undefined;
        if (method === undefined) continue;
        const path = `/${base}/${String(Reflect.getMetadata(PATH_METADATA, handler))}`.replace(/\/+/g, '/').replace(/(.)\/$/, '$1');
        routes.push({ method: RequestMethod[method], path });
      }
    }
  }
  return routes.sort((a, b) => `${a.path} ${a.method}`.localeCompare(`${b.path} ${b.method}`));
}
