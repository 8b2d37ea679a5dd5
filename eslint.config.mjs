// @ts-check
import eslint from '@eslint/js';
import prettierRecommended from 'eslint-plugin-prettier/recommended';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: [
      '**/dist/**',
      '**/node_modules/**',
      '**/.weft/**',
      'coverage/**',
      'eslint.config.mjs',
      'bench/results/**',
      // Apps as users have them, each linted by its own generated config (oxlint, eslint).
      'test/consumers/**',
    ],
  },
  eslint.configs.recommended,
  ...tseslint.configs.recommended,
  prettierRecommended,
  {
    languageOptions: { ecmaVersion: 2023, sourceType: 'module', globals: { process: 'readonly', console: 'readonly' } },
    rules: {
      // Size is judged in review, by a module's job; this is a backstop in code lines, far from every
      // file so nothing is squeezed to fit (docs/decisions/0019-a-file-size-backstop-not-a-target.md).
      'max-lines': ['error', { max: 800, skipBlankLines: true, skipComments: true }],
      complexity: ['error', { max: 15 }],
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
    },
  },
  {
    // Type-checked rules (each file typed by its nearest tsconfig.json): a promise nobody awaits
    // or hands on is a failure nobody sees. Fire-and-forget is `void`, with the reason beside it.
    files: ['**/*.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: { '@typescript-eslint/no-floating-promises': 'error' },
  },
  {
    // Plain JS: the ESM scripts (bench/run.js, scripts/, test/support hooks) and CommonJS consumer files.
    files: ['**/*.js', '**/*.mjs'],
    languageOptions: { sourceType: 'module', globals: { globalThis: 'readonly', URL: 'readonly' } },
  },
  {
    files: ['**/*.cjs'],
    languageOptions: { sourceType: 'commonjs', globals: { require: 'readonly', module: 'writable', __dirname: 'readonly' } },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
);
