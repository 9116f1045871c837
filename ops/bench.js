#!/usr/bin/env node
'use strict';
// `npm run bench`: throughput and latency of the hot paths of the built service, measured over
// HTTP with autocannon from this process against the service in a child process, on the embedded
// defaults (embedded PostgreSQL, SoftHSM2) in a fresh DATA_DIR:
//   token-secret     POST .../token, client_credentials with client_id + client_secret
//   token-assertion  POST .../token, client_credentials with a signed client assertion (ES256),
//                    a distinct jti per request, all signed before the run
//   probe            GET .../whoami with one bearer token
//   device-create    POST /aims/rs/scim/v2/Device, a distinct CUID per request (201)
//   device-get       GET /aims/rs/scim/v2/Device/{id} of one device
//   gateway-list     GET /configuration/{org}/v2/DeliveryGateway/Push (the organization's default gateways)
//   hello            GET /health/live, the cheapest route through the whole stack
//   nest-hello       not the platform: a bare Nest + Fastify hello-world (ops/bench/nest-hello.js) in a
//                    process of its own, the yardstick of this host's speed
// Each workload gets a 2 s warm-up run (not reported), then a measured run.
//
// Reading the table: req/s is the average over the run's 1 s samples; p50/p99 are response
// latencies in ms as autocannon sees them, with BENCH_CONNECTIONS requests in flight, so they
// include queueing in the service. Load generator and service share the machine's cores, so the
// figures are a lower bound of what the service does alone, and other work on the machine (the
// load average is printed) makes them noisy. The CPU columns are steadier: CPU time per request
// of the service's Node processes, of its embedded PostgreSQL, and of the load generator (this
// process), over the measured run; compare those when judging a change. `x nest-hello` divides
// each by the bare Nest + Fastify hello-world's, which hosts move alike and the platform's changes do
// not, measured again for REFERENCE_CHECK_S right after the workload (its own row is the full
// measurement); `at 25 us` multiplies that by 25 µs, what the bare hello-world cost on the slow host
// where issue 35 set its targets (docs/performance.md). Any answer other than the workload's status
// (200 unless it says otherwise) or any connection error/timeout fails the run (exit 1); the status
// codes and the first unexpected answer are then printed.
//
// The figures are also written as JSON to BENCH_JSON (.test-run/bench.json), which the regression
// guard (ops/bench/regression.js, test/bench-regression.spec.ts) compares with ops/bench/baseline.json.
//
// Options (environment): BENCH_JSON, BENCH_DURATION_S (10), BENCH_CONNECTIONS (50), BENCH_WORKERS (1), BENCH_WORKLOADS (a comma
// list, default all), LOG_LEVEL of the service (info, so the access log is included as deployed),
// DATABASE_URL (an empty database instead of the embedded one).
const os = require('node:os');
const { ensureDependencies, ensureDebianPackages, build } = require('./setup');
const { WORKLOADS } = require('./bench/workloads');
const { startCpuMeasurement } = require('./bench/cpu');
const { REFERENCE, ratios } = require('./bench/regression');
const { SERVICE_NODE_FLAGS } = require('./service-command');

const WARMUP_S = 2;
/**
 * After each workload, the reference (the bare hello-world) is measured again for this long, and the
 * workload's multiple of it is taken against that measurement: on a VM shared with other tenants the
 * host's speed drifts within a run, and the reference measured once, last, read a quarter apart from
 * the start of one run to the next (docs/performance.md "The regression guard on another host").
 */
const REFERENCE_CHECK_S = 3;

function positiveInteger(name, fallback) {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1) throw new Error(`${name} must be a positive integer, not "${raw}"`);
  return value;
}

function readSettings() {
  return {
    durationS: positiveInteger('BENCH_DURATION_S', 10),
    connections: positiveInteger('BENCH_CONNECTIONS', 50),
    workloads: selectWorkloads(
      WORKLOADS,
      (process.env.BENCH_WORKLOADS ?? '')
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean),
    ),
    logLevel: process.env.LOG_LEVEL || 'info',
    databaseUrl: process.env.DATABASE_URL || undefined,
  };
}

function selectWorkloads(all, only) {
  const unknown = only.filter((name) => !all.some((w) => w.name === name));
  if (unknown.length > 0) throw new Error(`unknown BENCH_WORKLOADS ${unknown.join(', ')}; known: ${all.map((w) => w.name).join(', ')}`);
  return only.length === 0 ? all : all.filter((w) => only.includes(w.name));
}

const expectedStatus = (workload) => workload.status ?? 200;

/** Adds an onResponse hook that keeps the first answer with another status, for the report. */
function captureFirstFailure(options, expected, failure) {
  const requests = (options.requests ?? [{}]).map((request) => ({
    ...request,
    onResponse: (status, body, context, headers) => {
      if (status !== expected && !failure.sample) failure.sample = `${status} ${body.slice(0, 300)}`;
      request.onResponse?.(status, body, context, headers);
    },
  }));
  return { ...options, requests };
}

/** One autocannon run of `seconds`; `state.running` lets Ctrl-C stop it. */
async function runOnce(autocannon, workload, ctx, seconds, state) {
  const options = await workload.prepare({ ...ctx, seconds });
  const failure = {};
  const cpu = startCpuMeasurement(workload.reference ? state.reference.pid : state.service.child.pid);
  state.running = autocannon({ ...captureFirstFailure(options, expectedStatus(workload), failure), connections: ctx.connections, duration: seconds });
  const result = await state.running;
  state.running = undefined;
  return { ...result, firstFailure: failure.sample, cpu: cpu(result.requests.total) };
}

async function measure(autocannon, workload, ctx, state) {
  process.stdout.write(`${workload.name}: warm-up ${WARMUP_S} s, then ${ctx.seconds} s with ${ctx.connections} connections...\n`);
  await runOnce(autocannon, workload, ctx, WARMUP_S, state);
  const result = await runOnce(autocannon, workload, ctx, ctx.seconds, state);
  ctx.rates[workload.name] = result.requests.average;
  return { name: workload.name, status: expectedStatus(workload), result };
}

function unexpectedAnswers({ status, result }) {
  const counts = Object.entries(result.statusCodeStats).map(([code, { count }]) => (Number(code) === status ? 0 : count));
  return counts.reduce((sum, count) => sum + count, 0);
}

function failed(row) {
  return unexpectedAnswers(row) > 0 || row.result.errors > 0 || row.result.timeouts > 0;
}

const micros = (value) => (value === undefined ? '-' : value.toFixed(0));

/** What the reference workload (the bare Nest + Fastify hello-world) cost on the host issue 35 set its targets on. */
const REFERENCE_US_OF_THE_TARGETS = 25;

/**
 * Each workload's multiple of the reference, by the regression guard's own rule (regression.js
 * `ratios`: the reference measured right after the workload, else the run's one measurement), so
 * that the table prints what the guard compares; none when the run did not measure the reference.
 */
function multiplesOf(figures) {
  return figures.workloads[REFERENCE]?.serviceUs > 0 ? { [REFERENCE]: 1, ...ratios(figures) } : {};
}

function printTable(rows, multiples) {
  const header = [
    'workload',
    'req/s',
    'p50 ms',
    'p99 ms',
    'non-2xx',
    'errors/timeouts',
    'service us/req',
    'pg us/req',
    'loadgen us/req',
    `x ${REFERENCE}`,
    `at ${REFERENCE_US_OF_THE_TARGETS} us`,
  ];
  const lines = rows.map(({ name, result: r }) => {
    const multiple = multiples[name];
    return [
      name,
      r.requests.average.toFixed(0),
      String(r.latency.p50),
      String(r.latency.p99),
      String(r.non2xx),
      `${r.errors}/${r.timeouts}`,
      micros(r.cpu.serviceUs),
      micros(r.cpu.databaseUs),
      micros(r.cpu.generatorUs),
      multiple?.toFixed(2) ?? '-',
      micros(multiple && multiple * REFERENCE_US_OF_THE_TARGETS),
    ];
  });
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i].length)));
  const format = (cells) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ');
  process.stdout.write(`\n${format(header)}\n${widths.map((w) => '-'.repeat(w)).join('  ')}\n${lines.map(format).join('\n')}\n`);
}

function printNotes(rows, seconds) {
  for (const row of rows) {
    const { name, status, result: r } = row;
    const statuses = Object.entries(r.statusCodeStats)
      .map(([code, { count }]) => `${code}: ${count}`)
      .join(', ');
    if (failed(row)) process.stdout.write(`${name}: expected ${status}; answers by status ${statuses}; first unexpected: ${r.firstFailure ?? '(none)'}\n`);
    if (r.duration < seconds - 0.5) process.stdout.write(`${name}: ended after ${r.duration.toFixed(1)} s of ${seconds} s (request cap reached)\n`);
  }
}

function machine() {
  const load = os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
  return `${os.cpus().length} cores (${os.cpus()[0]?.model.trim()}), node ${process.version}, load average ${load}`;
}

/** The run's figures, as the JSON holds them and the regression guard reads them. */
function figuresOf(settings, rows) {
  const workloads = Object.fromEntries(
    rows.map((row) => {
      const { result: r } = row;
      const cpu = { serviceUs: r.cpu.serviceUs, databaseUs: r.cpu.databaseUs, generatorUs: r.cpu.generatorUs, referenceUs: row.referenceUs };
      return [row.name, { rate: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, ...cpu, failed: failed(row) }];
    }),
  );
  return { machine: machine(), date: new Date().toISOString(), connections: settings.connections, durationS: settings.durationS, workloads };
}

/** The run's figures as JSON (BENCH_JSON), for the regression guard. */
function writeFigures(figures) {
  const { mkdirSync, writeFileSync } = require('node:fs');
  const { dirname, join } = require('node:path');
  const file = process.env.BENCH_JSON || join(__dirname, '..', '.test-run', 'bench.json');
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, `${JSON.stringify(figures, null, 2)}\n`);
  process.stdout.write(`Figures written to ${file}\n`);
}

/** Starts the bare Nest + Fastify hello-world (ops/bench/nest-hello.js) with the service's V8 flags; answers { pid, url, process }. */
async function startReference() {
  const { fork } = require('node:child_process');
  const child = fork(require.resolve('./bench/nest-hello'), { execArgv: SERVICE_NODE_FLAGS, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const { port } = await new Promise((resolve, reject) => {
    child.once('message', resolve);
    child.once('exit', (code) => reject(new Error(`ops/bench/nest-hello.js exited with ${code} before listening`)));
  });
  return { pid: child.pid, url: `http://127.0.0.1:${port}`, process: child };
}

/** Stops the service and removes its DATA_DIR, once, whoever asks first (end, error, Ctrl-C). */
function makeShutdown(state, { stopService, removeWorkDir, logTail }) {
  let done;
  return (showLog) => {
    done ??= (async () => {
      state.running?.stop();
      state.reference?.process.kill();
      if (!state.service) return;
      if (showLog) process.stderr.write(`\nService output (tail):\n${logTail(state.service)}\n`);
      const exit = await stopService(state.service);
      if (exit !== 0) process.stderr.write(`The service stopped with ${exit}.\n`);
      removeWorkDir(state.service);
    })();
    return done;
  };
}

async function main(settings, state, service) {
  const autocannon = require('autocannon');
  const { setUpPlatform } = require('./bench/platform');

  process.stdout.write(`Starting the service (LOG_LEVEL=${settings.logLevel}, ${settings.databaseUrl ? 'DATABASE_URL' : 'embedded PostgreSQL'})...\n`);
  state.service = await service.startService(settings);
  await service.waitReady(state.service);
  if (settings.workloads.some((workload) => workload.reference)) state.reference = await startReference();
  const ctx = {
    ...(await setUpPlatform(state.service)),
    referenceUrl: state.reference?.url,
    seconds: settings.durationS,
    connections: settings.connections,
    rates: {},
  };

  const reference = settings.workloads.find((workload) => workload.reference);
  if (reference) await runOnce(autocannon, reference, ctx, WARMUP_S, state);
  const rows = [];
  for (const workload of settings.workloads) {
    if (state.interrupted) break;
    const row = await measure(autocannon, workload, ctx, state);
    if (reference && !workload.reference) row.referenceUs = (await runOnce(autocannon, reference, ctx, REFERENCE_CHECK_S, state)).cpu.serviceUs;
    rows.push(row);
  }
  if (state.interrupted) return 130;
  process.stdout.write(
    `\nMachine: ${machine()}\nService LOG_LEVEL=${settings.logLevel}, ${settings.connections} connections, ${settings.durationS} s per workload\n`,
  );
  const figures = figuresOf(settings, rows);
  printTable(rows, multiplesOf(figures));
  printNotes(rows, settings.durationS);
  writeFigures(figures);
  return rows.some(failed) ? 1 : 0;
}

/** Exit code: 0 all good, 1 a workload failed or the bench broke, 130 interrupted. */
function run() {
  const settings = readSettings();
  ensureDependencies();
  ensureDebianPackages([{ name: 'softhsm2', binary: 'softhsm2-util' }]);
  build();
  process.stdout.write(`Machine: ${machine()}\n`);
  const service = require('./bench/service');
  const state = {};
  const shutdown = makeShutdown(state, service);
  const finish = (code, showLog) => shutdown(showLog).finally(() => process.exit(code));
  for (const signal of ['SIGINT', 'SIGTERM']) {
    process.once(signal, () => {
      state.interrupted = true;
      process.stderr.write(`\n${signal}: stopping the service...\n`);
      finish(130, false);
    });
  }
  main(settings, state, service).then(
    (code) => state.interrupted || finish(code, code !== 0),
    (error) => {
      if (state.interrupted) return;
      process.stderr.write(`\nBench failed: ${error.message}\n`);
      finish(1, true);
    },
  );
}

try {
  run();
} catch (error) {
  process.stderr.write(`Bench failed: ${error.message}\n`);
  process.exit(1);
}
