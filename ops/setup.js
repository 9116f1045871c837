'use strict';
// Shared by the two README commands (npm start, npm test): make a fresh clone runnable.
// Plain Node, no dependencies: it runs before node_modules exists.
const { execFileSync, spawnSync } = require('node:child_process');
const { existsSync, statSync } = require('node:fs');
const { join } = require('node:path');

const ROOT = join(__dirname, '..');

function run(command, args, options = {}) {
  const result = spawnSync(command, args, { cwd: ROOT, stdio: 'inherit', ...options });
  if (result.status !== 0) {
    process.stderr.write(`\n${command} ${args.join(' ')} failed (exit ${result.status ?? result.signal}).\n`);
    process.exit(result.status || 1);
  }
}

function has(command) {
  return spawnSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' }).status === 0;
}

/**
 * Installs the locked dependencies when node_modules is missing or older than package-lock.json.
 * `npm install` rather than `npm ci`: the registry this project is built from serves only this
 * platform's optional native binaries, so npm writes a lock without the other platforms' entries,
 * and `npm ci` refuses such a lock as "out of sync". `npm install` installs the same locked versions.
 */
function ensureDependencies() {
  const installed = join(ROOT, 'node_modules', '.package-lock.json');
  const lock = join(ROOT, 'package-lock.json');
  if (existsSync(installed) && statSync(installed).mtimeMs >= statSync(lock).mtimeMs) return;
  process.stdout.write('Installing the locked dependencies (npm install)...\n');
  run('npm', ['install', '--no-audit', '--no-fund']);
}

/**
 * Debian packages the embedded defaults need: SoftHSM2 stands in for the HSM (DECISIONS 12), and
 * the tests also use OpenSC's pkcs11-tool. Installed with apt when missing and we are root;
 * otherwise the exact command is printed.
 */
function ensureDebianPackages(packages) {
  const missing = packages.filter(({ binary, file }) => (file ? !existsSync(file) : !has(binary))).map(({ name }) => name);
  if (missing.length === 0) return;
  const command = `apt-get install -y --no-install-recommends ${missing.join(' ')}`;
  const root = typeof process.getuid === 'function' && process.getuid() === 0;
  if (!root || !has('apt-get')) {
    process.stderr.write(`Missing Debian packages: ${missing.join(', ')}. Install them with:\n  sudo apt-get update && sudo ${command}\n`);
    process.exit(1);
  }
  process.stdout.write(`Installing ${missing.join(', ')} with apt-get...\n`);
  run('apt-get', ['update', '-qq'], { stdio: ['ignore', 'ignore', 'inherit'] });
  run('sh', ['-c', `DEBIAN_FRONTEND=noninteractive ${command}`], { stdio: ['ignore', 'ignore', 'inherit'] });
}

const PORTAL = join(ROOT, 'portal');

/**
 * The management portal (portal/, DECISIONS 17) has its own package.json, lock and node_modules:
 * installed like the root's, when missing or older than its lock.
 */
function ensurePortalDependencies() {
  const installed = join(PORTAL, 'node_modules', '.package-lock.json');
  const lock = join(PORTAL, 'package-lock.json');
  if (existsSync(installed) && statSync(installed).mtimeMs >= statSync(lock).mtimeMs) return;
  process.stdout.write("Installing the portal's locked dependencies (npm install in portal/)...\n");
  run('npm', ['install', '--no-audit', '--no-fund'], { cwd: PORTAL });
}

const portalBin = (name) => join(PORTAL, 'node_modules', '.bin', name);

/** The portal's API types, generated from the committed OpenAPI document (src/api/openapi.json). */
function generatePortalApiTypes() {
  run(portalBin('openapi-typescript'), ['src/api/openapi.json', '--output', 'src/api/schema.d.ts', '--silent'], { cwd: PORTAL });
}

/** Type-checks the portal (its own tsconfig: a browser app, not part of the root's). */
function typecheckPortal() {
  generatePortalApiTypes();
  run(portalBin('tsc'), ['-p', 'tsconfig.json', '--noEmit'], { cwd: PORTAL });
}

/** `vite build` into portal/dist, which the service serves at /portal/. */
function buildPortal() {
  generatePortalApiTypes();
  run(portalBin('vite'), ['build', '--logLevel', 'warn'], { cwd: PORTAL });
}

function build() {
  run(join(ROOT, 'node_modules', '.bin', 'swc'), ['apps', 'libs', 'migrations', '-d', 'dist', '--quiet'], { stdio: ['ignore', 'ignore', 'inherit'] });
}

module.exports = { ROOT, run, has, ensureDependencies, ensurePortalDependencies, ensureDebianPackages, build, typecheckPortal, buildPortal, execFileSync };
