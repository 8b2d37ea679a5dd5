import type { DynamicModule } from '@nestjs/common';
import { weftControllers } from './http/controllers.js';
import { WEFT_MODULE_EXTRAS } from './weft.constants.js';
import type { WeftModuleExtras } from './weft-module.options.js';

/** Adds what forRoot/forRootAsync decide statically: global flag, controllers, the extras themselves. */
export function withWeftExtras(definition: DynamicModule, extras: WeftModuleExtras): DynamicModule {
  const { isGlobal, http, metrics } = extras;
  return {
    ...definition,
    global: isGlobal,
    providers: [...(definition.providers ?? []), { provide: WEFT_MODULE_EXTRAS, useValue: { http, metrics } }],
    controllers: [...(definition.controllers ?? []), ...weftControllers({ http, metrics })],
  };
}
