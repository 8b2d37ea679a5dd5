/** @type {import('jest').Config} */
const { swcOptions } = require('./test/support/swc-options');

const swc = swcOptions();

module.exports = {
  rootDir: '.',
  testEnvironment: 'node',
  testMatch: ['<rootDir>/libs/**/*.spec.ts', '<rootDir>/src/**/*.spec.ts', '<rootDir>/test/**/*.e2e-spec.ts'],
  testPathIgnorePatterns: ['/node_modules/', '/dist/', '<rootDir>/test/chaos/soak'],
  transform: { '^.+\\.ts$': ['@swc/jest', swc] },
  moduleNameMapper: {
    '^@weft/nest$': '<rootDir>/libs/weft/src',
    '^@weft/nest/(.*)$': '<rootDir>/libs/weft/src/$1',
  },
  globalSetup: '<rootDir>/test/support/global-setup.js',
  globalTeardown: '<rootDir>/test/support/global-teardown.js',
  testTimeout: 60000,
  maxWorkers: 2,
};
