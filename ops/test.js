#!/usr/bin/env node
'use strict';
// `npm test`: the whole suite on a fresh clone. Installs dependencies and SoftHSM2/OpenSC when
// missing (and Debian's headless Chromium for the browser tests), checks formatting, type-checks, lints, then runs Jest (whose global setup builds dist/ once
// for the suites that start the built service).
// Tests use their own embedded PostgreSQL unless DATABASE_URL is set, and a fresh SoftHSM2 token.
const { readFileSync, rmSync } = require('node:fs');
const { join } = require('node:path');
const { spawnSync } = require('node:child_process');
const { ROOT, run, ensureDependencies, ensurePortalDependencies, ensureDebianPackages, typecheckPortal, buildPortal } = require('./setup');

ensureDependencies();
ensurePortalDependencies();
ensureDebianPackages([
  { name: 'softhsm2', binary: 'softhsm2-util' },
  { name: 'opensc', binary: 'pkcs11-tool' },
  // What a person sees is tested in a real browser: Debian's headless Chromium, driven by
  // playwright-core (no browser download is reachable from CI).
  { name: 'chromium-headless-shell', binary: 'chromium-headless-shell' },
  { name: 'fonts-liberation', file: '/usr/share/fonts/truetype/liberation' },
]);
const bin = (name) => join(ROOT, 'node_modules', '.bin', name);
process.stdout.write('Checking formatting (prettier; `npm run format` fixes it)...\n');
run(bin('prettier'), ['--check', '--log-level=warn', '.']);
process.stdout.write('Type-checking...\n');
run(bin('tsc'), ['-p', 'tsconfig.json', '--noEmit']);
process.stdout.write('Type-checking the portal...\n');
typecheckPortal();
process.stdout.write('Linting (the service and the portal)...\n');
run(bin('eslint'), ['.', '--max-warnings=0']);
// The browser tests drive the built portal as the service serves it.
process.stdout.write('Building the portal...\n');
buildPortal();

const report = join(ROOT, '.test-run', 'jest-report.json');
rmSync(report, { force: true });
const jest = spawnSync(bin('jest'), ['--maxWorkers=2', '--json', `--outputFile=${report}`, ...process.argv.slice(2)], { cwd: ROOT, stdio: 'inherit' });
let summary;
try {
  summary = JSON.parse(readFileSync(report, 'utf8'));
} catch {
  process.stderr.write('Jest wrote no report: the run did not complete.\n');
  process.exit(jest.status || 1);
}
// The plain closing line CI reads, alone on its line.
process.stdout.write(`\n${summary.numPassedTests} passed, ${summary.numFailedTests} failed\n`);
process.exit(summary.success && jest.status === 0 && summary.numTotalTests > 0 ? 0 : 1);
