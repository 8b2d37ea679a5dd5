export * from './errors';
export * from './options';
export type { WeftDatabaseOption, WeftUrlDatabase, OpenedDatabase } from './storage/data-source';
export { openDatabase } from './storage/data-source';
export { WeftModule } from './nest/weft.module';
export { WEFT_MODULE_OPTIONS, WEFT_ASYNC_OPTIONS_TYPE, WEFT_OPTIONS_TYPE } from './nest/weft.module-definition';
export type { WeftModuleOptions } from './nest/weft.module-definition';
export { WeftHealthIndicator } from './nest/weft-health.indicator';
export { WEFT_DATABASE } from './nest/weft-database.provider';
