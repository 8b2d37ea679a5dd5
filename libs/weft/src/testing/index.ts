// `@weft/nest/testing`: the testing kit (docs/testing.md). Its own entry of the package: nothing
// here is loaded by `@weft/nest` itself.
export { WeftTestEnvironment } from './environment.js';
export type { WeftTestEnvironmentOptions, WeftTestingOptions } from './environment.js';
export { WeftTestingModule } from './testing.module.js';
export type { WeftTestingModuleOptions } from './testing.module.js';
export { WeftTestClock } from './test-clock.control.js';
export type { TestClockOptions } from './test-clock.control.js';
export { weftMatchers } from './matchers.js';
export { startTestDatabaseServer } from './test-database.js';
export type { WeftMatchers } from './matchers.js';
export { TestClockStuckError } from '../common/errors.js';
