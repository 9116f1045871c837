// Lint: typescript-eslint's recommended rules plus the house rules (STYLE.md, docs/performance.md).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', '.data/', '.test-run/', 'coverage/', 'portal/dist/', 'portal/node_modules/', 'portal/src/api/schema.d.ts'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      // A feature is imported through its barrel (@app/x), never by a path into it; its test hooks
      // through their own barrel (@app/x/testing), from tests only (next block).
      'no-restricted-imports': [
        'error',
        { patterns: [{ group: ['@app/*/*', '!@app/*/testing'], message: 'Import a feature through its barrel, e.g. @app/auth.' }] },
      ],
    },
  },
  {
    files: ['apps/**/*.ts', 'libs/**/*.ts'],
    ignores: ['**/*.spec.ts', 'libs/*/src/testing/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [{ group: ['@app/*/*'], message: 'Import a feature through its barrel, e.g. @app/auth; production code never imports test hooks.' }] },
      ],
    },
  },
  {
    files: ['apps/**/*.ts', 'libs/**/*.ts'],
    rules: {
      // A barrel names what it exports. Compiled to CommonJS, `export *` gives every name of every
      // barrel one shared getter whose property load V8 cannot specialise: 1.6% of a cached GET's
      // CPU (docs/performance.md, "An eleventh look").
      'no-restricted-syntax': [
        'error',
        {
          selector: "ExportAllDeclaration[exportKind='value']",
          message: "Name the exports: export { a, type B } from './x'; export * costs every use a megamorphic getter.",
        },
      ],
    },
  },
  {
    files: ['apps/**/*.ts', 'libs/**/*.ts'],
    ignores: ['libs/config/**', 'libs/hsm/src/softhsm-provisioning.ts', 'libs/hsm/src/testing/**', '**/*.spec.ts'],
    rules: {
      // Configuration is read once, validated, in libs/config; nobody else reads the environment.
      'no-restricted-properties': ['error', { object: 'process', property: 'env', message: 'Read configuration through AppConfig (libs/config).' }],
    },
  },
  {
    // The portal (DECISIONS 17) is a browser app, linted with the same rules; it is a client of the
    // service's public API only and imports nothing from libs/.
    files: ['portal/**/*.{ts,tsx}'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [{ group: ['@app/*', '**/libs/**', '**/apps/**'], message: 'The portal calls the API; it imports nothing of the service.' }] },
      ],
    },
  },
  {
    files: ['ops/**/*.js', '*.js'],
    languageOptions: {
      sourceType: 'commonjs',
      globals: { require: 'readonly', module: 'writable', process: 'readonly', __dirname: 'readonly', console: 'readonly' },
    },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
);
