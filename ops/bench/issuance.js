#!/usr/bin/env node
'use strict';
// `npm run bench:issuance`: a full card issuance through the HTTP API (Issue 14 target >= 150 per
// second): one operator creates the issuance request, a second approves it, the first runs the sync
// session with the card's P-256 CSR and gets the certificate back (3 requests; the CA key signs in
// SoftHSM2). The built service runs in a child process on its embedded defaults; the load runs in
// this process, BENCH_CONCURRENCY (16) issuances at a time, BENCH_ISSUANCES (600) per round, the
// median of BENCH_ROUNDS (3) rounds after a warm-up of BENCH_WARM_UP (1,200) issuances. Cardholders,
// their wallets and the cards are seeded with SQL; the CSRs are made before the clock starts (a card
// makes its key pair itself).
// Where the time goes, per issuance: the service's own time per route and in the HSM (from its
// /metrics), and the CPU time of the service's Node process, of its PostgreSQL and of this load
// generator (from /proc).
const { Buffer } = require('node:buffer');
const http = require('node:http');
const os = require('node:os');
const { URL } = require('node:url');
const { join } = require('node:path');
const { ROOT, ensureDependencies, ensureDebianPackages, build } = require('../setup');
const { startService, waitReady, stopService, removeWorkDir, connectDatabase, logTail } = require('./service');
const { setUpPlatform } = require('./platform');
const { startCpuMeasurement } = require('./cpu');
/* global fetch */

const ISSUANCES = Number(process.env.BENCH_ISSUANCES || 600);
const ROUNDS = Number(process.env.BENCH_ROUNDS || 3);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY || 16);
// Long enough for the service and this generator to reach their steady CPU per issuance: after a
// warm-up of 60, the first round cost the service about half as much again per issuance as the later
// ones, and this generator more (V8 still compiling their code), while a pause of 40 s after the
// seeding changed nothing (docs/performance.md, "A ninth look"). The median of the rounds did not move.
const WARM_UP = Number(process.env.BENCH_WARM_UP || 1200);
// The tables at the sizes the targets assume (issue 35): BENCH_ARCHIVE_REQUESTS (1,000,000) completed
// content requests on as many ISSUED devices, and BENCH_POLICIES (10,000) device policies, in the
// bench organization, so that the statements' plans are those of a production database (0: skip).
const ARCHIVE_REQUESTS = Number(process.env.BENCH_ARCHIVE_REQUESTS ?? 1_000_000);
const POLICIES = Number(process.env.BENCH_POLICIES ?? 10_000);
// And BENCH_ARCHIVE_PEOPLE (100,000) other cardholders, each with an authenticator app and a
// certificate on file, and BENCH_GROUPS (20,000) user groups: tables the issuance path reads too.
const ARCHIVE_PEOPLE = Number(process.env.BENCH_ARCHIVE_PEOPLE ?? 100_000);
const GROUPS = Number(process.env.BENCH_GROUPS ?? 20_000);
// And BENCH_ARCHIVE_AUDIT_EVENTS (1,000,000) audit events already chained, of an organization of their
// own: each issuance writes events, and the audit chainer reads and links them in that table.
const ARCHIVE_AUDIT_EVENTS = Number(process.env.BENCH_ARCHIVE_AUDIT_EVENTS ?? 1_000_000);
const SCIM = 'application/scim+json';
const progress = (message) => process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${message}\n`);
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

ensureDependencies();
ensureDebianPackages([
  { name: 'softhsm2', binary: 'softhsm2-util' },
  { name: 'opensc', binary: 'pkcs11-tool' },
]);
build();

/** `count` cardholders with their wallets and as many AVAILABLE cards (CUIDs from `firstCuid`). */
async function seed(db, org, count, firstCuid) {
  const { rows } = await db.query(
    `WITH made AS (
       INSERT INTO users (id, org_id, user_name, user_type, role, display_name, emails, created_at, updated_at)
       SELECT gen_random_uuid(), $1, 'holder' || ($3 + i), 'cardholder', 'Cardholder', 'Holder ' || ($3 + i), '[]', now(), now()
         FROM generate_series(1, $2) AS i RETURNING id)
     INSERT INTO wallets (id, org_id, owner_user_id, created_at, updated_at) SELECT gen_random_uuid(), $1, id, now(), now() FROM made RETURNING id`,
    [org, count, firstCuid],
  );
  const devices = await db.query(
    `WITH made AS (
       INSERT INTO devices (id, org_id, status, reason, created_at, updated_at)
       SELECT gen_random_uuid(), $1, 'AVAILABLE', 'NONE', now(), now() FROM generate_series(1, $2) RETURNING id)
     SELECT id, row_number() OVER () AS n FROM made`,
    [org, count],
  );
  for (const device of devices.rows) {
    device.cuid = String(firstCuid + Number(device.n));
  }
  await db.query(
    'INSERT INTO device_external_ids (device_id, org_id, position, atr, cuid) SELECT d, $1, 1, $2, c FROM unnest($3::uuid[], $4::text[]) AS x(d, c)',
    [org, '3B8F8001', devices.rows.map((d) => d.id), devices.rows.map((d) => d.cuid)],
  );
  return rows.map((wallet, i) => ({ wallet: wallet.id, device: devices.rows[i].id, cuid: devices.rows[i].cuid }));
}

/** Devices issued long ago with their completed issuance requests, and device policies: the tables at realistic sizes. */
async function seedArchive(db, org) {
  if (POLICIES > 0) {
    progress(`seeding ${POLICIES.toLocaleString('en')} device policies...`);
    await db.query(
      `INSERT INTO device_policies (id, org_id, name, credential_types, created_at, updated_at)
       SELECT gen_random_uuid(), $1, 'archive policy ' || i, ARRAY['PKI_CERTIFICATE'], now(), now() FROM generate_series(1, $2) AS i`,
      [org, POLICIES],
    );
  }
  if (GROUPS > 0) {
    progress(`seeding ${GROUPS.toLocaleString('en')} user groups...`);
    await db.query(
      `INSERT INTO user_groups (id, org_id, display_name, created_at, updated_at) SELECT gen_random_uuid(), $1, 'archive group ' || i, now(), now()
         FROM generate_series(1, $2) AS i`,
      [org, GROUPS],
    );
  }
  if (ARCHIVE_PEOPLE > 0) {
    progress(`seeding ${ARCHIVE_PEOPLE.toLocaleString('en')} other cardholders with an authenticator and a certificate each...`);
    await db.query(
      `WITH made AS (
         INSERT INTO users (id, org_id, user_name, user_type, role, display_name, emails, created_at, updated_at)
         SELECT gen_random_uuid(), $1, 'archive' || i, 'cardholder', 'Cardholder', 'Archive ' || i, '[]', now(), now()
           FROM generate_series(1, $2) AS i RETURNING id),
       apps AS (
         INSERT INTO authenticators (id, org_id, user_id, display_name, operating_system, push_handle, public_key, thumbprint, created_at, updated_at)
         SELECT gen_random_uuid(), $1, id, 'phone', 'Android', 'handle-' || id, '{}', md5(id::text), now(), now() FROM made)
       INSERT INTO user_certificates (user_id, thumbprint, pem, subject, issuer, serial_number, not_before, not_after, expires_at, created_at)
       SELECT id, md5(id::text), '-', 'CN=archive', 'CN=archive', '01', now() - interval '1 day', now() + interval '1 year', now() + interval '1 year', now()
         FROM made`,
      [org, ARCHIVE_PEOPLE],
    );
  }
  if (ARCHIVE_AUDIT_EVENTS > 0) {
    progress(`seeding ${ARCHIVE_AUDIT_EVENTS.toLocaleString('en')} chained audit events...`);
    // Linked by made-up digests: the chainer takes only events without a digest, and nothing verifies this chain.
    await db.query(
      `INSERT INTO audit_events (occurred_at, org_id, actor, action, code, target, outcome, details, chain_seq, prev_digest, digest)
       SELECT now() - interval '30 days' + i * interval '1 second', $1, 'archive', 'content_request.create', 0, 'archive ' || i, 'success', '{}',
              i, md5((i - 1)::text), md5(i::text)
         FROM generate_series(1, $2) AS i`,
      [`${org}_audit_archive`, ARCHIVE_AUDIT_EVENTS],
    );
  }
  if (ARCHIVE_REQUESTS === 0) return;
  progress(`seeding ${ARCHIVE_REQUESTS.toLocaleString('en')} issued devices and their completed content requests...`);
  await db.query(
    `WITH made AS (
       INSERT INTO devices (id, org_id, status, reason, issued_at, created_at, updated_at)
       SELECT gen_random_uuid(), $1, 'ISSUED', 'NONE', now() - interval '1 day', now() - interval '2 days', now() - interval '1 day'
         FROM generate_series(1, $2) RETURNING id)
     INSERT INTO content_requests (id, org_id, type, status, device_id, reason, requested_by, requested_by_kind, requested_by_id,
                                   approved_by, expires_at, created_at, updated_at)
     SELECT gen_random_uuid(), $1, 'issuance', 'completed', id, 'NONE', 'archive', 'system_account', 'archive', 'archive',
            now() + interval '1 day', now() - interval '2 days', now() - interval '1 day'
       FROM made`,
    [org, ARCHIVE_REQUESTS],
  );
}

/** Row counts of `tables`, for the sequential scans' report. */
async function rowCounts(db, tables) {
  if (tables.length === 0) return {};
  const { rows } = await db.query('SELECT relname, n_live_tup::float AS n FROM pg_stat_user_tables WHERE relname = ANY($1)', [tables]);
  return Object.fromEntries(rows.map((row) => [row.relname, row.n]));
}

/** P-256 CSRs, as cards make them. */
async function makeCsrs(count) {
  // The PKI library's test CSR (built into dist/ with the service).
  const { p256Csr } = require(join(ROOT, 'dist/libs/pki/src/testing'));
  const csrs = [];
  for (let i = 0; i < count; i++) csrs.push((await p256Csr()).toString('base64'));
  return csrs;
}

/** The service's histograms that say where its time went: per route, and in the HSM. */
async function serviceTimes(metricsUrl) {
  const text = await (await fetch(metricsUrl)).text();
  const sums = {};
  for (const line of text.split('\n')) {
    const match = /^(http_request_duration_seconds|hsm_sign_duration_seconds)_(sum|count)\{([^}]*)\} (\S+)$/.exec(line);
    if (!match) continue;
    const labels = Object.fromEntries([...match[3].matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
    const key = match[1] === 'hsm_sign_duration_seconds' ? `HSM sign (${labels.use})` : `${labels.method} ${labels.route}`;
    sums[key] ??= { sum: 0, count: 0 };
    sums[key][match[2]] += Number(match[4]);
  }
  return sums;
}

/** The database's counters: transactions, rows, and sequential scans per table. */
async function databaseWork(db) {
  const [totals] = (
    await db.query(
      `SELECT xact_commit::float AS commits, tup_inserted::float AS inserted, tup_updated::float AS updated, tup_fetched::float AS fetched,
        blks_read::float AS read, blks_hit::float AS hit FROM pg_stat_database WHERE datname = 'platform'`,
    )
  ).rows;
  const tables = (await db.query('SELECT relname, seq_scan::float AS seq_scan FROM pg_stat_user_tables')).rows;
  return { ...totals, seqScans: Object.fromEntries(tables.map((t) => [t.relname, t.seq_scan])) };
}

/**
 * The embedded server's WAL so far: full-page images (a page's first change after a checkpoint is
 * logged whole), bytes, and the checkpoints begun.
 */
async function walWork(db) {
  const [wal] = (
    await db.query(
      `SELECT wal_fpi::float AS fpi, wal_bytes::float AS bytes, (SELECT (num_timed + num_requested)::float FROM pg_stat_checkpointer) AS checkpoints
         FROM pg_stat_wal`,
    )
  ).rows;
  return wal;
}

/** Issue 35: the issuance path scans no table over this many rows sequentially. */
const LARGE_TABLE = 10_000;

const per2 = (after, before, table, issued) => `${((after.seqScans[table] - (before.seqScans[table] ?? 0)) / issued).toFixed(2)}/issuance`;

async function main() {
  const service = await startService({ logLevel: process.env.LOG_LEVEL || 'warn' });
  try {
    await waitReady(service);
    const ctx = await setUpPlatform(service);
    // node:http with keep-alive rather than fetch: the load generator shares the 2 cores with the
    // service, and fetch costs it about twice the CPU per request.
    const agent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY * 2 });
    const { hostname, port } = new URL(ctx.baseUrl);
    const call = (token, method, path, body) =>
      new Promise((resolve, reject) => {
        const payload = body === undefined ? undefined : JSON.stringify(body);
        const headers = { ...ctx.applicationHeaders, authorization: `Bearer ${token}`, accept: SCIM };
        if (payload !== undefined) Object.assign(headers, { 'content-type': SCIM, 'content-length': Buffer.byteLength(payload) });
        const request = http.request({ agent, hostname, port, method, path, headers }, (response) => {
          const chunks = [];
          response.on('data', (chunk) => chunks.push(chunk));
          response.on('end', () => {
            const answer = JSON.parse(Buffer.concat(chunks).toString('utf8'));
            if (response.statusCode >= 300) reject(new Error(`${method} ${path}: ${response.statusCode} ${JSON.stringify(answer)}`));
            else resolve(answer);
          });
        });
        request.on('error', reject);
        request.end(payload);
      });
    const admin = ctx.adminToken;
    await call(admin, 'POST', `/admin/v1/organizations/${ctx.org}/ca`, {});
    const policy = await call(admin, 'POST', `/admin/v1/organizations/${ctx.org}/device-policies`, { name: 'Badge', credentialTypes: ['PKI_CERTIFICATE'] });
    const approverAccount = await call(admin, 'POST', `/admin/v1/organizations/${ctx.org}/system-accounts`, { suffix: 'approver', role: 'Issuance' });
    const requester = await ctx.accessToken();
    const approver = await ctx.tokenFor(approverAccount.clientId, approverAccount.secret.value);

    const total = WARM_UP + ROUNDS * ISSUANCES;
    progress(`seeding ${total} cardholders and cards, making ${total} CSRs...`);
    const db = await connectDatabase(service);
    const cards = await seed(db, ctx.org, total, 100000);
    await seedArchive(db, ctx.org);
    await db.query('VACUUM ANALYZE');
    const csrs = await makeCsrs(total);

    const phases = { create: [], approve: [], sync: [] };
    const timed = async (phase, work) => {
      const started = process.hrtime.bigint();
      const result = await work();
      phases[phase].push(Number(process.hrtime.bigint() - started) / 1e6);
      return result;
    };
    const issue = async (index) => {
      const card = cards[index];
      const request = await timed('create', () =>
        call(requester, 'POST', '/aims/rs/scim/v2/ContentRequest', {
          schemas: ['urn:vendor:scim:api:cms:1.0:ContentRequest'],
          type: 'issuance',
          target: { device: { value: card.device }, devicePolicy: { value: policy.id } },
          wallet: { value: card.wallet },
        }),
      );
      await timed('approve', () => call(approver, 'POST', `/aims/rs/scim/v2/ContentRequest/${request.id}/approve`, {}));
      const session = await timed('sync', () =>
        call(requester, 'POST', '/aims/rs/scim/v2/SyncSession', {
          schemas: ['urn:vendor:scim:api:cms:1.0:SyncSession'],
          contentRequest: { value: request.id },
          device: { ATR: '3B8F8001', CUID: card.cuid },
          results: [{ operation: 'ISSUE', status: 'SUCCESS', credentialType: 'PKI_CERTIFICATE', csr: csrs[index] }],
        }),
      );
      if (session.contentRequest.status !== 'completed' || !session.credentials[0]?.certificate?.value)
        throw new Error(`issuance ${index}: ${JSON.stringify(session)}`);
    };
    const run = async (from, count) => {
      let next = from;
      const worker = async () => {
        while (next < from + count) await issue(next++);
      };
      await Promise.all(Array.from({ length: CONCURRENCY }, worker));
    };

    progress('warm-up');
    await run(0, WARM_UP);
    for (const phase of Object.values(phases)) phase.length = 0;
    const metricsUrl = `http://127.0.0.1:${service.env.METRICS_PORT}/metrics`;
    const before = await serviceTimes(metricsUrl);
    const databaseBefore = await databaseWork(db);
    const rounds = [];
    for (let round = 0; round < ROUNDS; round++) {
      progress(`round ${round + 1}: ${ISSUANCES} issuances, ${CONCURRENCY} at a time`);
      // The WAL is read outside the CPU measurement, so that the bench's own statements are not counted.
      const walBefore = await walWork(db);
      const cpu = startCpuMeasurement(service.child.pid);
      const started = process.hrtime.bigint();
      await run(WARM_UP + round * ISSUANCES, ISSUANCES);
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      const used = cpu(ISSUANCES);
      const walAfter = await walWork(db);
      const wal = Object.fromEntries(Object.keys(walAfter).map((key) => [key, walAfter[key] - walBefore[key]]));
      rounds.push({ rate: ISSUANCES / seconds, ...used, wal });
    }
    const after = await serviceTimes(metricsUrl);
    const databaseAfter = await databaseWork(db);
    const issued = ROUNDS * ISSUANCES;
    const at = (key) => median(rounds.map((r) => r[key]));

    console.log(
      `\nMachine: ${os.cpus().length} cores, node ${process.version}; ${ROUNDS} rounds of ${ISSUANCES} issuances, ${CONCURRENCY} at a time (median)\n`,
    );
    console.log(`Full issuance (create, approve, SyncSession with a P-256 CSR)  ${at('rate').toFixed(0).padStart(6)} /s   target >= 150 /s`);
    const ms = (us) => (us === undefined ? '?' : (us / 1000).toFixed(1));
    console.log(
      `  rounds: ${rounds.map((r) => `${r.rate.toFixed(0)} /s (${ms(r.serviceUs)} + ${ms(r.databaseUs)} + ${ms(r.generatorUs)} ms)`).join(', ')}: service + PostgreSQL + load generator CPU per issuance`,
    );
    console.log(
      `  WAL per issuance, by round: ${rounds
        .map((r) => `${(r.wal.bytes / ISSUANCES / 1024).toFixed(1)} kB, ${(r.wal.fpi / ISSUANCES).toFixed(1)} full pages`)
        .join('; ')}; checkpoints begun: ${rounds.map((r) => r.wal.checkpoints).join(', ')}`,
    );
    console.log('\nLatency per call, as the client sees it (median / p99 ms):');
    for (const [phase, times] of Object.entries(phases)) {
      const sorted = [...times].sort((a, b) => a - b);
      console.log(`  ${phase.padEnd(8)} ${median(times).toFixed(1).padStart(6)} / ${sorted[Math.floor(sorted.length * 0.99)].toFixed(1)}`);
    }
    console.log('\nWhere the time goes, per issuance:');
    console.log(
      `  CPU: service (Node, incl. HTTP and the HSM library) ${Math.round(at('serviceUs'))} us, PostgreSQL ${Math.round(at('databaseUs') ?? 0)} us, this load generator ${Math.round(at('generatorUs'))} us`,
    );
    const per = (key) => ((databaseAfter[key] - databaseBefore[key]) / issued).toFixed(1);
    console.log(`  PostgreSQL: ${per('commits')} transactions, ${per('inserted')} rows inserted, ${per('updated')} updated, ${per('fetched')} fetched`);
    // A page not in shared_buffers comes from the kernel's page cache (or the disk): a copy and often an eviction.
    console.log(`  PostgreSQL pages: ${per('hit')} found in shared_buffers, ${per('read')} read from outside per issuance`);
    const scanned = Object.keys(databaseAfter.seqScans).filter((table) => databaseAfter.seqScans[table] > (databaseBefore.seqScans[table] ?? 0));
    const sizes = await rowCounts(db, scanned);
    await db.end();
    console.log(
      `  sequential scans during the run: ${
        scanned.length === 0
          ? 'none'
          : scanned.map((t) => `${t} ${per2(databaseAfter, databaseBefore, t, issued)} (${(sizes[t] ?? 0).toLocaleString('en')} rows)`).join(', ')
      }`,
    );
    // Issue 35's rule: no sequential scan of a table over LARGE_TABLE rows, however rare (0.00/issuance above can be a few).
    const large = scanned.filter((t) => (sizes[t] ?? 0) > LARGE_TABLE);
    console.log(
      `  sequential scans of tables over ${LARGE_TABLE.toLocaleString('en')} rows: ${
        large.length === 0
          ? 'none'
          : large.map((t) => `${t} ${databaseAfter.seqScans[t] - (databaseBefore.seqScans[t] ?? 0)} in all (${sizes[t].toLocaleString('en')} rows)`).join(', ')
      }`,
    );
    for (const key of Object.keys(after).sort()) {
      if (!/ContentRequest|SyncSession|HSM/.test(key)) continue;
      const sum = after[key].sum - (before[key]?.sum ?? 0);
      const count = after[key].count - (before[key]?.count ?? 0);
      if (count === 0) continue;
      console.log(`  ${key.padEnd(60)} ${((sum / issued) * 1000).toFixed(2).padStart(7)} ms per issuance (${(count / issued).toFixed(2)} per issuance)`);
    }
  } catch (error) {
    process.stderr.write(`\nService output (tail):\n${logTail(service)}\n`);
    throw error;
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
