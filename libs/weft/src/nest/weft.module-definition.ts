import { ConfigurableModuleBuilder } from '@nestjs/common';
import type { WeftOptions } from '../options';

export type WeftModuleOptions = WeftOptions;

export const {
  ConfigurableModuleClass: WeftConfigurableModule,
  MODULE_OPTIONS_TOKEN: WEFT_MODULE_OPTIONS,
  OPTIONS_TYPE: WEFT_OPTIONS_TYPE,
  ASYNC_OPTIONS_TYPE: WEFT_ASYNC_OPTIONS_TYPE,
} = new ConfigurableModuleBuilder<WeftModuleOptions>()
  .setClassMethodName('forRoot')
  .setExtras({ isGlobal: false }, (definition, extras) => ({ ...definition, global: extras.isGlobal }))
  .build();
