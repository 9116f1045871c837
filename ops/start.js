#!/usr/bin/env node
'use strict';
// `npm start`: installs what is missing, builds (the service and the portal it serves at /portal/), and runs the service on its embedded defaults
// (embedded PostgreSQL and a SoftHSM2 token under DATA_DIR, default ./.data) unless DATABASE_URL
// and PKCS11_MODULE say otherwise. `npm start -- --no-build` runs what was built last, as it is.
//
// Stopping (issue 34): package.json runs this file with `exec`, so that npm's shell is replaced by
// it: npm forwards SIGTERM and SIGINT to its child, and a shell in between (dash) died of them
// without passing them on, leaving this process, the service and its PostgreSQL running. Here each
// is passed to the service, which stops in order (its PostgreSQL with a fast shutdown) and exits,
// and this process exits with it. The service is told of this process's end through its IPC
// channel, so that it stops even when this process is killed outright.
const { spawn } = require('node:child_process');
const { ROOT, ensureDependencies, ensurePortalDependencies, ensureDebianPackages, build, buildPortal } = require('./setup');
const { serviceArgs } = require('./service-command');

const options = process.argv.slice(2);
const unknown = options.filter((option) => option !== '--no-build');
if (unknown.length > 0) {
  process.stderr.write(`Unknown option ${unknown.join(' ')}. Usage: npm start [-- --no-build]\n`);
  process.exit(2);
}
const prepare = !options.includes('--no-build');

if (prepare) {
  ensureDependencies();
  ensurePortalDependencies();
}
if (!process.env.PKCS11_MODULE) ensureDebianPackages([{ name: 'softhsm2', binary: 'softhsm2-util' }]);
if (prepare) {
  build();
  buildPortal();
}

const service = spawn(process.execPath, serviceArgs(), { cwd: ROOT, stdio: ['inherit', 'inherit', 'inherit', 'ipc'] });
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => service.kill(signal));
service.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
