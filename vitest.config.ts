import path from 'node:path';
import { defineConfig } from 'vitest/config';

// The suites: unit specs beside the code, e2e and multi-process specs under test/. Vite's
// TypeScript transform emits decorator metadata from tsconfig.json (emitDecoratorMetadata), which
// Nest's dependency injection needs. Consumer apps (test/consumers/*) have their own runners.
export default defineConfig({
  resolve: {
    alias: [
      { find: /^@weft\/nest\/testing$/, replacement: path.join(import.meta.dirname, 'libs/weft/src/testing/index.ts') },
      { find: /^@weft\/nest$/, replacement: path.join(import.meta.dirname, 'libs/weft/src/index.ts') },
    ],
  },
  test: {
    globals: true,
    include: ['libs/**/*.spec.ts', 'src/**/*.spec.ts', 'test/**/*.e2e-spec.ts'],
    exclude: ['**/node_modules/**', '**/dist/**', 'test/chaos/soak/**', 'test/consumers/*/**'],
    globalSetup: ['test/support/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    teardownTimeout: 30_000,
    pool: 'forks',
    maxWorkers: 2,
  },
});
