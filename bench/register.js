// Minimal require hook so benchmarks run from TypeScript sources without a build step:
// node -r ./bench/register.js bench/throughput.ts
const fs = require('node:fs');
const { transformSync } = require('@swc/core');

const { swcOptions: options } = require('../test/support/swc-options');

require.extensions['.ts'] = function compileTs(module, filename) {
  const source = fs.readFileSync(filename, 'utf8');
  module._compile(transformSync(source, options(filename)).code, filename);
};
