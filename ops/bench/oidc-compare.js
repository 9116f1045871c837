#!/usr/bin/env node
'use strict';
// `npm run bench:oidc`: token issuance by client secret on the platform against oidc-provider, the
// certified OpenID Connect server for Node, in the same run on the same machine (Issue 15 target:
// the platform >= 1.25x). Both issue a JWT access token signed ES256 for client_credentials with
// client_secret_post; the platform also checks the organization and the Application-ID policy,
// records the token (revocation, introspection) and signs in SoftHSM2, oidc-provider signs with an
// in-process key and keeps nothing (JWT format, in-memory adapter). The two run one after the
// other, alternating, BENCH_ROUNDS (3) rounds of BENCH_DURATION_S (10) s with BENCH_CONNECTIONS (50)
// connections after a warm-up each; medians, and the CPU per token of each server.
const { spawn } = require('node:child_process');
const { randomBytes } = require('node:crypto');
const os = require('node:os');
const { join } = require('node:path');
const { URL, URLSearchParams } = require('node:url');
const { ROOT, ensureDependencies, ensureDebianPackages, build } = require('../setup');
const { startService, waitReady, stopService, removeWorkDir } = require('./service');
const { SERVICE_NODE_FLAGS } = require('../service-command');
const { setUpPlatform } = require('./platform');
const { startCpuMeasurement } = require('./cpu');
const { autocannon } = require('./autocannon');

const ROUNDS = Number(process.env.BENCH_ROUNDS || 3);
const DURATION_S = Number(process.env.BENCH_DURATION_S || 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS || 50);
const TARGET_RATIO = 1.25;
/** BENCH_OIDC_FORMAT: oidc-provider's access token format, jwt (default: it keeps nothing) or opaque (kept in its memory). */
const FORMAT = process.env.BENCH_OIDC_FORMAT || 'jwt';
const FORM = { 'content-type': 'application/x-www-form-urlencoded' };
const progress = (message) => process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${message}\n`);
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

ensureDependencies();
ensureDebianPackages([
  { name: 'softhsm2', binary: 'softhsm2-util' },
  { name: 'opensc', binary: 'pkcs11-tool' },
]);
build();

/** oidc-provider in a child process (ops/bench/oidc-provider.mjs), once it listens; with the service's V8 flags, like for like. */
function startOidcProvider(port, secret) {
  const child = spawn(process.execPath, [...SERVICE_NODE_FLAGS, join(ROOT, 'ops/bench/oidc-provider.mjs'), String(port), secret, FORMAT], {
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`oidc-provider exited (${code}) before listening`)));
    child.stdout.on('data', (chunk) => String(chunk).includes('ready') && resolve(child));
  });
}

async function measure(what, pid, url, body) {
  await autocannon(url, { method: 'POST', headers: FORM, body, seconds: 2, connections: CONNECTIONS });
  const cpu = startCpuMeasurement(pid);
  const run = await autocannon(url, { method: 'POST', headers: FORM, body, seconds: DURATION_S, connections: CONNECTIONS });
  const used = cpu(run.total);
  progress(`${what}: ${Math.round(run.rate)} tokens/s, CPU ${Math.round(used.serviceUs)} + ${Math.round(used.databaseUs ?? 0)} us per token`);
  return { ...run, serviceUs: used.serviceUs, databaseUs: used.databaseUs ?? 0 };
}

async function main() {
  const service = await startService({ logLevel: process.env.LOG_LEVEL || 'info' });
  let reference;
  try {
    await waitReady(service);
    const ctx = await setUpPlatform(service);
    const secret = randomBytes(24).toString('base64url');
    const port = Number(new URL(service.baseUrl).port) + 1;
    reference = await startOidcProvider(port, secret);
    const ours = {
      url: `${ctx.baseUrl}/authentication/customer/${ctx.org}/token`,
      body: new URLSearchParams({ grant_type: 'client_credentials', client_id: ctx.account.clientId, client_secret: ctx.account.secret }).toString(),
    };
    const theirs = {
      url: `http://127.0.0.1:${port}/token`,
      body: new URLSearchParams({ grant_type: 'client_credentials', client_id: 'bench', client_secret: secret }).toString(),
    };
    const platform = [];
    const oidc = [];
    for (let round = 1; round <= ROUNDS; round++) {
      platform.push(await measure(`round ${round}, platform`, service.child.pid, ours.url, ours.body));
      oidc.push(await measure(`round ${round}, oidc-provider`, reference.pid, theirs.url, theirs.body));
    }
    const rate = (runs) => median(runs.map((r) => r.rate));
    const ratio = rate(platform) / rate(oidc);
    console.log(
      `\nMachine: ${os.cpus().length} cores, node ${process.version}; ${ROUNDS} alternating rounds of ${DURATION_S} s, ${CONNECTIONS} connections (medians)\n`,
    );
    const line = (name, runs) =>
      `${name.padEnd(22)} ${String(Math.round(rate(runs))).padStart(6)} tokens/s  p99 ${median(runs.map((r) => r.p99))} ms  CPU ${Math.round(median(runs.map((r) => r.serviceUs)))} + ${Math.round(median(runs.map((r) => r.databaseUs)))} us per token`;
    console.log(line('platform', platform));
    console.log(line(`oidc-provider (${FORMAT})`, oidc));
    console.log(`\nplatform / oidc-provider: ${ratio.toFixed(2)}x   target >= ${TARGET_RATIO}x`);
  } finally {
    reference?.kill();
    await stopService(service);
    removeWorkDir(service);
  }
}

main().then(
  () => process.exit(0),
  (error) => {
    console.error(error);
    process.exit(1);
  },
);
