// One swc configuration for running the TypeScript sources in plain `node` processes outside the
// test runner: engine children of the multi-process tests, the chaos workers and the benchmarks
// (all loaded through ts-hooks.js). Decorator metadata is emitted, as tsc does for `nest build`.
import path from 'node:path';

export const ROOT = path.resolve(import.meta.dirname, '..', '..');

/** swc options for one file, compiled to an ES module. */
export function swcOptions(filename) {
  return {
    filename,
    swcrc: false,
    configFile: false,
    sourceMaps: 'inline',
    jsc: {
      parser: { syntax: 'typescript', decorators: true },
      transform: { legacyDecorator: true, decoratorMetadata: true },
      target: 'es2022',
      keepClassNames: true,
    },
    module: { type: 'es6' },
  };
}
