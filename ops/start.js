#!/usr/bin/env node
'use strict';
// `npm start`: installs what is missing, builds (the service and the portal it serves at /portal/), and runs the service on its embedded defaults
// (embedded PostgreSQL and a SoftHSM2 token under DATA_DIR, default ./.data) unless DATABASE_URL
// and PKCS11_MODULE say otherwise.
const { spawn } = require('node:child_process');
const { ROOT, ensureDependencies, ensurePortalDependencies, ensureDebianPackages, build, buildPortal } = require('./setup');
const { serviceArgs } = require('./service-command');

ensureDependencies();
ensurePortalDependencies();
if (!process.env.PKCS11_MODULE) ensureDebianPackages([{ name: 'softhsm2', binary: 'softhsm2-util' }]);
build();
buildPortal();

const service = spawn(process.execPath, serviceArgs(), { cwd: ROOT, stdio: 'inherit' });
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => service.kill(signal));
service.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
