#!/usr/bin/env node
'use strict';
// `npm run bench:push`: push delivery (issue 25; docs/contract/DECISIONS.md 10.1) on this machine.
// The built service in a child process on its embedded defaults, a fake notification hub on loopback
// in this process (it answers 201 and counts, by idempotency key), a gateway and an authenticator
// policy configured over HTTP as an administrator would.
//   outbox -> hub    BENCH_PUSH_NOTIFICATIONS (20,000) notifications committed at once to the outbox,
//                    for BENCH_PUSH_PEOPLE (1,000) people with one authenticator each: notifications
//                    per second from the commit until the hub has them all and every row is `sent`
//                    (median of 3 runs)                                   target >= 1,000 /s
//                    "CPU a + b us": CPU time per notification of the service's Node process and of
//                    its PostgreSQL (+ this process's hub): steadier than the rate on a shared machine.
//   CIBA             p99 from an out-of-band approval to the client's next successful token poll,
//                    beyond the polling interval                          target < 100 ms
//                    (ops/bench/ciba.js: cardholders with an authenticator app each, the client
//                    polling at BENCH_CIBA_INTERVAL_S (1), the app approving at random moments)
const os = require('node:os');
const { Buffer } = require('node:buffer');
const { setTimeout: sleep } = require('node:timers/promises');
const { existsSync } = require('node:fs');
const { createServer } = require('node:http');
const { join } = require('node:path');
const { ROOT, ensureDependencies, ensureDebianPackages, build } = require('../setup');
const { startService, waitReady, stopService, removeWorkDir, connectDatabase } = require('./service');
const { setUpPlatform } = require('./platform');
const { startCpuMeasurement } = require('./cpu');
const { cibaApprovalToPoll, CIBA_SERVICE_ENV } = require('./ciba');
/* global fetch */

const PEOPLE = Number(process.env.BENCH_PUSH_PEOPLE || 1_000);
// A whole number of notifications per person.
const NOTIFICATIONS = Math.ceil(Number(process.env.BENCH_PUSH_NOTIFICATIONS || 20_000) / PEOPLE) * PEOPLE;
const RUNS = 3;
const progress = (message) => process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${message}\n`);
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

// The node_modules of a shared checkout (a symlink) is never reinstalled from here.
if (!existsSync(join(ROOT, 'node_modules'))) ensureDependencies();
ensureDebianPackages([{ name: 'softhsm2', binary: 'softhsm2-util' }]);
build();

/** The sender's settings for the run: a short poll, and room for many sends to the one hub. */
const SENDER = {
  PUSH_LOOPBACK_HUBS: 'true',
  PUSH_POLL_INTERVAL_MS: '50',
  PUSH_BATCH_SIZE: '200',
  PUSH_CONCURRENCY: '128',
  PUSH_GATEWAY_CONCURRENCY: '64',
};

/** A notification hub on loopback that answers 201 at once and counts what it received, by idempotency key. */
async function startHub() {
  const keys = new Set();
  let received = 0;
  let waiter;
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      received++;
      keys.add(req.headers['idempotency-key']);
      res.writeHead(201).end();
      if (waiter && received >= waiter.count) waiter.resolve();
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: server.address().port,
    reset: () => {
      received = 0;
      keys.clear();
    },
    counts: () => ({ received, distinct: keys.size }),
    /** Resolves when `count` sends have arrived. */
    until: (count) => new Promise((resolve) => (waiter = { count, resolve })),
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

async function configureGateway(ctx, hub) {
  const token = await ctx.accessToken();
  const headers = { ...ctx.applicationHeaders, authorization: `Bearer ${token}`, 'content-type': 'application/scim+json' };
  const post = async (path, body) => {
    const response = await fetch(`${ctx.baseUrl}/configuration/${ctx.org}/v2${path}`, { method: 'POST', headers, body: JSON.stringify(body) });
    if (response.status !== 201) throw new Error(`POST ${path}: ${response.status} ${await response.text()}`);
    return response.json();
  };
  const key = Buffer.from('bench-hub-shared-access-key-0123456789').toString('base64');
  const gateway = await post('/DeliveryGateway/Push?api-version=3', {
    schemas: ['urn:vendor:scim:api:idp:2.0:DeliveryGateway:Push'],
    type: 'CLOUD_GCM_PUSH',
    name: 'Bench hub',
    hub: 'bench-hub',
    connectionString: `Endpoint=sb://127.0.0.1:${hub.port}/;SharedAccessKeyName=DefaultFullSharedAccessSignature;SharedAccessKey=${key}`,
    supportedOperatingSystems: ['Android'],
    messageTemplates: { credential: { title: 'Credential', msg: '{{message}}' } },
  });
  await post('/Policy/Authenticator', {
    schemas: ['urn:vendor:scim:api:idp:2.0:Policy:Authenticator'],
    name: 'Bench policy',
    deliveryGateways: [{ value: gateway.id }],
  });
}

/** PEOPLE cardholders of the bench organization, one Android authenticator each. */
async function seedPeople(db, org) {
  await db.query(
    `INSERT INTO users (id, org_id, user_name, user_type, role, display_name, created_at, updated_at)
     SELECT gen_random_uuid(), $1, 'push' || lpad(i::text, 6, '0'), 'cardholder', 'Cardholder', 'Push ' || i, now(), now()
       FROM generate_series(1, $2) AS i`,
    [org, PEOPLE],
  );
  await db.query(
    `INSERT INTO authenticators (id, org_id, user_id, display_name, operating_system, push_handle, public_key, thumbprint, created_at, updated_at)
     SELECT gen_random_uuid(), org_id, id, 'Phone', 'Android', 'bench-handle-' || user_name, '{"kty":"EC","crv":"P-256","x":"x","y":"y"}'::jsonb,
            'thumbprint-' || user_name, now(), now()
       FROM users WHERE org_id = $1 AND user_name LIKE 'push%'`,
    [org],
  );
}

/**
 * One run: NOTIFICATIONS rows committed in one statement (as many changes committing at once would
 * leave them), then the time until the hub has received them all and every row is settled `sent`.
 */
async function outboxRun(db, org, hub, servicePid) {
  hub.reset();
  const arrived = hub.until(NOTIFICATIONS);
  const started = process.hrtime.bigint();
  await db.query(
    `INSERT INTO push_outbox (id, org_id, user_id, authenticator_id, template, template_values, cause, due_at, created_at, updated_at)
     SELECT gen_random_uuid(), a.org_id, a.user_id, a.id, 'credential', jsonb_build_object('message', 'Bench notification ' || n), 'bench.push', now(), now(), now()
       FROM generate_series(1, $2) AS n CROSS JOIN authenticators a WHERE a.org_id = $1`,
    [org, Math.ceil(NOTIFICATIONS / PEOPLE)],
  );
  const committed = process.hrtime.bigint();
  const cpu = startCpuMeasurement(servicePid);
  await arrived;
  const atHub = process.hrtime.bigint();
  for (;;) {
    // Through the senders' own partial index (pending rows only), so that the check costs the database little.
    const { rows } = await db.query("SELECT count(*)::int AS n FROM push_outbox WHERE state = 'pending'");
    if (rows[0].n === 0) break;
    await sleep(50);
  }
  const settled = process.hrtime.bigint();
  const used = cpu(NOTIFICATIONS);
  const seconds = (from, to) => Number(to - from) / 1e9;
  const counts = hub.counts();
  if (counts.distinct !== NOTIFICATIONS)
    throw new Error(`the hub received ${counts.received} sends for ${counts.distinct} notifications, expected ${NOTIFICATIONS} once each`);
  const { rows: unsent } = await db.query("SELECT count(*)::int AS n FROM push_outbox WHERE org_id = $1 AND state <> 'sent'", [org]);
  if (unsent[0].n !== 0) throw new Error(`${unsent[0].n} notifications ended other than sent`);
  await db.query('DELETE FROM push_outbox WHERE org_id = $1', [org]);
  await db.query('VACUUM push_outbox');
  return {
    insertS: seconds(started, committed),
    toHub: NOTIFICATIONS / seconds(committed, atHub),
    settled: NOTIFICATIONS / seconds(committed, settled),
    duplicates: counts.received - counts.distinct,
    serviceUs: used.serviceUs,
    databaseUs: used.databaseUs,
    hubUs: used.generatorUs,
  };
}

async function main() {
  const hub = await startHub();
  const service = await startService({ logLevel: process.env.LOG_LEVEL || 'info', extraEnv: { ...SENDER, ...CIBA_SERVICE_ENV } });
  try {
    await waitReady(service);
    const ctx = await setUpPlatform(service);
    await configureGateway(ctx, hub);
    const db = await connectDatabase(service);
    const rows = [];
    try {
      progress(`seeding ${PEOPLE.toLocaleString('en')} people with an authenticator each...`);
      await seedPeople(db, ctx.org);
      progress('warm-up');
      await outboxRun(db, ctx.org, hub, service.child.pid);
      const runs = [];
      for (let i = 0; i < RUNS; i++) {
        progress(`outbox -> hub, run ${i + 1} of ${RUNS} (${NOTIFICATIONS.toLocaleString('en')} notifications)`);
        runs.push(await outboxRun(db, ctx.org, hub, service.child.pid));
      }
      const rate = (key) => Math.round(median(runs.map((r) => r[key]))).toLocaleString('en');
      rows.push([
        `outbox -> hub, ${NOTIFICATIONS.toLocaleString('en')} notifications committed at once`,
        `${rate('toHub')} /s at the hub, ${rate('settled')} /s settled sent; CPU ${rate('serviceUs')} + ${rate('databaseUs')} us (+ hub ${rate('hubUs')} us)`,
        '>= 1,000 /s',
      ]);
      // The CIBA figure (issue 25 item 4): p99 from the app's approval to the client's next successful poll.
      const ciba = await cibaApprovalToPoll(ctx, db);
      rows.push([
        `CIBA approval -> next successful poll, beyond the ${ciba.intervalS} s interval`,
        `p99 ${ciba.beyondMs.toFixed(1)} ms beyond (p99 ${ciba.p99Ms.toFixed(0)}, p50 ${ciba.p50Ms.toFixed(0)} ms; ${ciba.samples} requests)`,
        'p99 < 100 ms',
      ]);
    } finally {
      await db.end();
    }
    console.log(
      `\nMachine: ${os.cpus().length} cores, node ${process.version}, load average ${os
        .loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}; medians of ${RUNS} runs; one service process, sender settings ${JSON.stringify(SENDER)}\n`,
    );
    for (const [what, figure, target] of rows) console.log(`${what.padEnd(64)} ${figure.padStart(52)}   ${target}`);
  } finally {
    await stopService(service);
    removeWorkDir(service);
    await hub.close();
  }
}

main().then(
  () => process.exit(0),
  (error) => {
    console.error(error);
    process.exit(1);
  },
);
