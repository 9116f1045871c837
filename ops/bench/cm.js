#!/usr/bin/env node
'use strict';
// `npm run bench:cm`: the credential-management directory (Issue 12) on this machine, over HTTP, the
// built service in a child process on its embedded defaults, the load from autocannon in another.
//   user-get        GET /aims/rs/scim/v2/Users/{uid}                        target >= 10,000 /s
//   self-get        GET /aims/rs/scim/v2/Self (a cardholder's password token)  target >= 10,000 /s
//   device-get      GET /aims/rs/scim/v2/Device/{id}                        target >= 10,000 /s
//   search-eq       POST /Users/.search, userName eq, in an org of BENCH_USERS (100,000) users   >= 5,000 /s
//   search-co       POST /Users/.search, userName co, same org                p99 < 50 ms
//   stats           GET /Stats over BENCH_DEVICES (1,000,000) devices, one request at a time  < 100 ms
// "CPU a + b us" is the CPU time per request of the service's Node process and of its PostgreSQL:
// steadier than req/s on a 2-core machine shared with the load generator.
// and, for scale, GET /health/live through the same stack and load (the cheapest route: the ceiling
// of this host). Users and devices are seeded with SQL into the service's embedded database.
// Medians of 3 runs of BENCH_DURATION_S (5) seconds after a warm-up, BENCH_CONNECTIONS (32) connections.
const os = require('node:os');
const { ensureDependencies, ensureDebianPackages, build } = require('../setup');
const { startService, waitReady, stopService, removeWorkDir, connectDatabase } = require('./service');
const { setUpPlatform } = require('./platform');
const { startCpuMeasurement } = require('./cpu');
const { autocannon: run } = require('./autocannon');
const { URLSearchParams } = require('node:url');
/* global fetch */

const USERS = Number(process.env.BENCH_USERS || 100_000);
const DEVICES = Number(process.env.BENCH_DEVICES || 1_000_000);
const DURATION_S = Number(process.env.BENCH_DURATION_S || 5);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS || 32);
const SCIM = 'application/scim+json';
const SEARCH = 'urn:ietf:params:scim:api:messages:2.0:SearchRequest';
const progress = (message) => process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${message}\n`);
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

ensureDependencies();
ensureDebianPackages([
  { name: 'softhsm2', binary: 'softhsm2-util' },
  { name: 'opensc', binary: 'pkcs11-tool' },
]);
build();

/** Users user000001.. with their wallets, and devices spread over the statuses, in the bench organization. */
async function seed(db, org) {
  progress(`seeding ${USERS.toLocaleString('en')} users...`);
  await db.query(
    `INSERT INTO users (id, org_id, user_name, user_type, role, display_name, emails, created_at, updated_at)
     SELECT gen_random_uuid(), $1, 'user' || lpad(i::text, 6, '0'), 'cardholder', 'Cardholder', 'User ' || i,
            jsonb_build_array(jsonb_build_object('value', 'user' || i || '@example.com', 'type', 'work')), now(), now()
       FROM generate_series(1, $2) AS i`,
    [org, USERS],
  );
  await db.query(
    `INSERT INTO wallets (id, org_id, owner_user_id, created_at, updated_at) SELECT gen_random_uuid(), org_id, id, now(), now() FROM users u
                  WHERE org_id = $1 AND NOT EXISTS (SELECT 1 FROM wallets w WHERE w.owner_user_id = u.id)`,
    [org],
  );
  progress(`seeding ${DEVICES.toLocaleString('en')} devices...`);
  await db.query(
    `INSERT INTO devices (id, org_id, status, reason, created_at, updated_at)
     SELECT gen_random_uuid(), $1, (ARRAY['AVAILABLE','ISSUED','ISSUED','ISSUED','ON_HOLD','REVOKED','TERMINATED'])[1 + i % 7], 'NONE', now(), now()
       FROM generate_series(1, $2) AS i`,
    [org, DEVICES],
  );
  // The steady state autovacuum reaches after a bulk load (visibility map set, statistics fresh),
  // without waiting for it: Stats counts with an index-only scan only where the map says so.
  await db.query('VACUUM ANALYZE users');
  await db.query('VACUUM ANALYZE devices');
  await db.query('VACUUM ANALYZE wallets');
}

/** One autocannon run with this bench's defaults. */
function autocannon(url, { seconds = DURATION_S, connections = CONNECTIONS, ...options }) {
  return run(url, { ...options, seconds, connections });
}

/** `servicePid`: the service's process tree (its Node processes and its embedded PostgreSQL), for CPU per request. */
let servicePid;

async function threeRuns(what, url, options) {
  progress(what);
  await autocannon(url, { ...options, seconds: 2 });
  const runs = [];
  for (let i = 0; i < 3; i++) {
    const cpu = startCpuMeasurement(servicePid);
    const run = await autocannon(url, options);
    runs.push({ ...run, ...cpu(run.total) });
  }
  const at = (key) => median(runs.map((r) => r[key]));
  return { rate: at('rate'), p50: at('p50'), p99: at('p99'), serviceUs: at('serviceUs'), databaseUs: at('databaseUs') };
}

async function main() {
  const service = await startService({ logLevel: process.env.LOG_LEVEL || 'info' });
  servicePid = service.child.pid;
  try {
    await waitReady(service);
    const ctx = await setUpPlatform(service);
    const db = await connectDatabase(service);
    try {
      await seed(db, ctx.org);
    } finally {
      await db.end();
    }
    const headers = { ...ctx.applicationHeaders, authorization: `Bearer ${await ctx.accessToken()}`, accept: SCIM, 'content-type': SCIM };
    const base = `${ctx.baseUrl}/aims/rs/scim/v2`;
    const json = async (method, path, body, token = headers.authorization) => {
      const response = await fetch(`${ctx.baseUrl}${path}`, { method, headers: { ...headers, authorization: token }, body: body && JSON.stringify(body) });
      if (response.status >= 300) throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
      return response.json();
    };
    // A cardholder with a password, for GET /Self; one device, for GET /Device/{id}.
    const password = 'bench-cardholder-passphrase';
    const cardholder = await json('POST', '/aims/rs/scim/v2/Users', {
      schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
      userName: 'bench.cardholder',
      password,
    });
    const grant = await fetch(`${ctx.baseUrl}/authentication/customer/${ctx.org}/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'password', username: 'bench.cardholder', password }).toString(),
    }).then((r) => r.json());
    const device = await json('POST', '/aims/rs/scim/v2/Device', {
      schemas: ['urn:vendor:scim:api:cms:1.0:Device'],
      externalIds: [{ ATR: '3B00', CUID: '4242' }],
    });
    const search = (filter) => JSON.stringify({ schemas: [SEARCH], filter });

    const rows = [];
    const add = (what, figure, target) => rows.push([what, figure, target]);
    const cpu = (r) => (r.serviceUs === undefined ? '' : `; CPU ${Math.round(r.serviceUs)} + ${Math.round(r.databaseUs ?? 0)} us`);
    const rate = (r) => `${Math.round(r.rate).toLocaleString('en')} /s, p99 ${r.p99} ms${cpu(r)}`;
    add('GET /Users/{uid}', rate(await threeRuns('user-get', `${base}/Users/${cardholder.id}`, { headers })), '>= 10,000 /s');
    add(
      'GET /Self',
      rate(await threeRuns('self-get', `${base}/Self`, { headers: { ...headers, authorization: `Bearer ${grant.access_token}` } })),
      '>= 10,000 /s',
    );
    add('GET /Device/{id}', rate(await threeRuns('device-get', `${base}/Device/${device.id}`, { headers })), '>= 10,000 /s');
    const middle = `user${String(Math.ceil(USERS / 2)).padStart(6, '0')}`;
    add(
      `POST /Users/.search userName eq (${USERS.toLocaleString('en')} users)`,
      rate(await threeRuns('search-eq', `${base}/Users/.search`, { method: 'POST', headers, body: search(`userName eq "${middle}"`) })),
      '>= 5,000 /s',
    );
    const co = await threeRuns('search-co', `${base}/Users/.search`, {
      method: 'POST',
      headers,
      body: search(`userName co "${middle.slice(-5)}"`),
      connections: 8,
    });
    add(`POST /Users/.search userName co (8 connections)`, `p99 ${co.p99} ms, p50 ${co.p50} ms, ${Math.round(co.rate)} /s`, 'p99 < 50 ms');

    progress('stats');
    const times = [];
    for (let i = 0; i < 25; i++) {
      const started = process.hrtime.bigint();
      const stats = await json('GET', '/aims/rs/scim/v2/Stats');
      times.push(Number(process.hrtime.bigint() - started) / 1e6);
      if (i === 0 && Object.values(stats.devices).reduce((a, b) => a + b, 0) < DEVICES) throw new Error(`Stats counted ${JSON.stringify(stats.devices)}`);
    }
    const sorted = [...times].sort((a, b) => a - b);
    add(
      `GET /Stats over ${DEVICES.toLocaleString('en')} devices (one at a time)`,
      `median ${median(times).toFixed(1)} ms, max ${sorted.at(-1).toFixed(1)} ms`,
      '< 100 ms',
    );
    add('for scale: GET /health/live, same stack and load', rate(await threeRuns('live', `${ctx.baseUrl}/health/live`, {})), '');

    console.log(
      `\nMachine: ${os.cpus().length} cores, node ${process.version}, load average ${os
        .loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}; medians of 3 runs of ${DURATION_S} s, ${CONNECTIONS} connections\n`,
    );
    for (const [what, figure, target] of rows) console.log(`${what.padEnd(56)} ${figure.padStart(48)}   ${target}`);
  } finally {
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
