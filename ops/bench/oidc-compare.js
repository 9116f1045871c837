#!/usr/bin/env node
'use strict';
// `npm run bench:oidc`: token issuance by client secret (client_credentials, client_secret_post) on
// the platform and on oidc-provider, the certified OpenID Connect server for Node, in the same run on
// the same machine. Three servers, measured one after the other, alternating:
// - platform: the contract's work per token (DECISIONS 3.4): an access token and an id_token, both
//   signed ES256 in SoftHSM2, and one row recorded in PostgreSQL (the organization and Application-ID
//   policy checked too);
// - oidc-provider, same work: both tokens signed ES256 with an in-process key, one row per token with
//   one INSERT into a database of the service's embedded PostgreSQL (ops/bench/oidc-provider.mjs);
// - oidc-provider, bare: its access token only, nothing stored (a second reference).
// BENCH_ROUNDS (3) rounds of BENCH_DURATION_S (10) s with BENCH_CONNECTIONS (50) connections after a
// warm-up each; medians of rate, p99 and CPU per token (Node process + PostgreSQL).
const { Buffer } = require('node:buffer');
const { spawn } = require('node:child_process');
const { randomBytes } = require('node:crypto');
const os = require('node:os');
const { join } = require('node:path');
const { URLSearchParams } = require('node:url');
const { ROOT, ensureDependencies, ensureDebianPackages, build } = require('../setup');
const { startService, waitReady, stopService, removeWorkDir, connectDatabase, databaseEnvironment, freePort } = require('./service');
const { SERVICE_NODE_FLAGS } = require('../service-command');
const { setUpPlatform } = require('./platform');
const { startCpuMeasurement } = require('./cpu');
const { autocannon } = require('./autocannon');
/* global fetch */

const ROUNDS = Number(process.env.BENCH_ROUNDS || 3);
const DURATION_S = Number(process.env.BENCH_DURATION_S || 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS || 50);
const OIDC_DATABASE = 'oidc_provider';
const FORM = { 'content-type': 'application/x-www-form-urlencoded' };
const progress = (message) => process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${message}\n`);
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

ensureDependencies();
ensureDebianPackages([
  { name: 'softhsm2', binary: 'softhsm2-util' },
  { name: 'opensc', binary: 'pkcs11-tool' },
]);
build();

/** oidc-provider's database in the service's embedded PostgreSQL, with the table its same-work mode writes. */
async function createOidcDatabase(service) {
  const admin = await connectDatabase(service);
  try {
    await admin.query(`CREATE DATABASE ${OIDC_DATABASE}`);
  } finally {
    await admin.end();
  }
  const { Client } = require('pg');
  const client = new Client(pgClientOptions(databaseEnvironment(service, OIDC_DATABASE)));
  await client.connect();
  await client.query(
    'CREATE TABLE issued_tokens (jti text PRIMARY KEY, client_id text NOT NULL, issued_at timestamptz NOT NULL, expires_at timestamptz NOT NULL)',
  );
  return client;
}

function pgClientOptions(env) {
  return { host: env.PGHOST, port: Number(env.PGPORT), user: env.PGUSER, password: env.PGPASSWORD, database: env.PGDATABASE };
}

/** oidc-provider in a child process (ops/bench/oidc-provider.mjs), once it listens; with the service's V8 flags, like for like. */
async function startOidcProvider(mode, secret, databaseEnv) {
  const port = await freePort();
  const child = spawn(process.execPath, [...SERVICE_NODE_FLAGS, join(ROOT, 'ops/bench/oidc-provider.mjs'), String(port), secret, mode], {
    env: { PATH: process.env.PATH, ...databaseEnv },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`oidc-provider (${mode}) exited (${code}) before listening`)));
    child.stdout.on('data', (chunk) => String(chunk).includes('ready') && resolve());
  });
  return { child, url: `http://127.0.0.1:${port}/token` };
}

/** One token request before measuring: the answer must carry what the side claims to do, each token signed ES256. */
async function checkAnswer(what, url, body, expectIdToken) {
  const response = await fetch(url, { method: 'POST', headers: FORM, body });
  const answer = await response.text();
  const { access_token: accessToken, id_token: idToken } = response.status === 200 ? JSON.parse(answer) : {};
  const es256 = (jwt) => JSON.parse(Buffer.from(jwt.split('.')[0], 'base64url')).alg === 'ES256';
  const tokens = expectIdToken ? [accessToken, idToken] : [accessToken];
  if (!tokens.every((jwt) => jwt && es256(jwt)) || Boolean(idToken) !== expectIdToken) {
    throw new Error(`${what} answered ${response.status} ${answer}`);
  }
}

/** A run's rate, p99 and CPU per token: `nodePid`'s Node processes, and the service's PostgreSQL (which every side's rows go to). */
async function measure(what, url, body, nodePid, servicePid) {
  await autocannon(url, { method: 'POST', headers: FORM, body, seconds: 2, connections: CONNECTIONS });
  const nodeCpu = startCpuMeasurement(nodePid);
  const databaseCpu = startCpuMeasurement(servicePid);
  const run = await autocannon(url, { method: 'POST', headers: FORM, body, seconds: DURATION_S, connections: CONNECTIONS });
  const nodeUs = nodeCpu(run.total).serviceUs;
  const databaseUs = databaseCpu(run.total).databaseUs ?? 0;
  progress(`${what}: ${Math.round(run.rate)} tokens/s, CPU ${Math.round(nodeUs)} + ${Math.round(databaseUs)} us per token`);
  return { ...run, nodeUs, databaseUs };
}

async function main() {
  const service = await startService({ logLevel: process.env.LOG_LEVEL || 'info' });
  const references = [];
  let oidcDb;
  try {
    await waitReady(service);
    const ctx = await setUpPlatform(service);
    oidcDb = await createOidcDatabase(service);
    const secret = randomBytes(24).toString('base64url');
    const oidcBody = new URLSearchParams({ grant_type: 'client_credentials', client_id: 'bench', client_secret: secret }).toString();
    const sameWork = await startOidcProvider('same-work', secret, databaseEnvironment(service, OIDC_DATABASE));
    references.push(sameWork.child);
    const bare = await startOidcProvider('bare', secret, {});
    references.push(bare.child);
    const sides = [
      {
        name: 'platform: HSM-signed access token + id_token + token row',
        url: `${ctx.baseUrl}/authentication/customer/${ctx.org}/token`,
        body: new URLSearchParams({ grant_type: 'client_credentials', client_id: ctx.account.clientId, client_secret: ctx.account.secret }).toString(),
        pid: service.child.pid,
        idToken: true,
      },
      {
        name: 'oidc-provider, same work: in-process key, access token + id_token + token row (one INSERT each)',
        url: sameWork.url,
        body: oidcBody,
        pid: sameWork.child.pid,
        idToken: true,
      },
      { name: 'oidc-provider, bare: in-process key, access token only, nothing stored', url: bare.url, body: oidcBody, pid: bare.child.pid, idToken: false },
    ];
    for (const side of sides) await checkAnswer(side.name, side.url, side.body, side.idToken);
    for (const side of sides) side.runs = [];
    for (let round = 1; round <= ROUNDS; round++) {
      for (const side of sides) side.runs.push(await measure(`round ${round}, ${side.name.split(':')[0]}`, side.url, side.body, side.pid, service.child.pid));
    }
    const [{ count }] = (await oidcDb.query('SELECT count(*)::int AS count FROM issued_tokens')).rows;
    const answered = sides[1].runs.reduce((sum, run) => sum + run.total, 0);
    if (count < answered) throw new Error(`oidc-provider, same work: ${count} rows stored for ${answered} tokens answered in the measured runs`);

    const rate = (side) => median(side.runs.map((r) => r.rate));
    console.log(
      `\nMachine: ${os.cpus().length} cores, node ${process.version}, load average ${os
        .loadavg()
        .map((l) => l.toFixed(1))
        .join(' ')}; ` + `${ROUNDS} alternating rounds of ${DURATION_S} s, ${CONNECTIONS} connections (medians; CPU per token = Node process + PostgreSQL)\n`,
    );
    for (const side of sides) {
      const cpu = `${Math.round(median(side.runs.map((r) => r.nodeUs)))} + ${Math.round(median(side.runs.map((r) => r.databaseUs)))} us`;
      console.log(`${side.name}\n  ${Math.round(rate(side))} tokens/s  p99 ${median(side.runs.map((r) => r.p99))} ms  CPU ${cpu} per token`);
    }
    console.log(`\nplatform / oidc-provider doing the same work: ${(rate(sides[0]) / rate(sides[1])).toFixed(2)}x`);
    console.log(`platform / oidc-provider bare:               ${(rate(sides[0]) / rate(sides[2])).toFixed(2)}x`);
  } finally {
    await oidcDb?.end();
    for (const child of references) child.kill();
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
