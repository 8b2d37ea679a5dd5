import { ConfigurableModuleBuilder } from '@nestjs/common';
import type { WeftModuleExtras, WeftModuleOptions } from './weft-module.options.js';
import { withWeftExtras } from './weft.module-extras.js';

export const {
  ConfigurableModuleClass: WeftConfigurableModule,
  MODULE_OPTIONS_TOKEN: WEFT_MODULE_OPTIONS,
  OPTIONS_TYPE: WEFT_OPTIONS_TYPE,
  ASYNC_OPTIONS_TYPE: WEFT_ASYNC_OPTIONS_TYPE,
} = new ConfigurableModuleBuilder<WeftModuleOptions>({ moduleName: 'Weft' })
  .setClassMethodName('forRoot')
  .setFactoryMethodName('createWeftOptions')
  .setExtras<WeftModuleExtras>({ isGlobal: false }, withWeftExtras)
  .build();
