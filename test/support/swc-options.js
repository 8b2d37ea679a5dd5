// One swc configuration for every place that compiles the sources outside `nest build`:
// jest (jest.config.js), transpiled child processes (transpile.ts) and benchmarks (bench/register.js).
const path = require('node:path');

const ROOT = path.resolve(__dirname, '..', '..');

/** swc options; with `filename`, also the @weft/nest path alias (jest maps it itself). */
function swcOptions(filename) {
  return {
    ...(filename && { filename, swcrc: false, configFile: false }),
    sourceMaps: 'inline',
    jsc: {
      parser: { syntax: 'typescript', decorators: true },
      transform: { legacyDecorator: true, decoratorMetadata: true },
      target: 'es2022',
      keepClassNames: true,
      ...(filename && { baseUrl: ROOT, paths: { '@weft/nest': ['libs/weft/src'], '@weft/nest/*': ['libs/weft/src/*'] } }),
    },
    module: { type: 'commonjs' },
  };
}

module.exports = { swcOptions, ROOT };
