'use strict';
// The service under measurement: the built API as a child process on the embedded defaults
// (embedded PostgreSQL and a SoftHSM2 token) in a fresh DATA_DIR under .test-run/bench-<pid>/.
// Its output goes to a file there, so the bench process spends no CPU reading the access log.
// BENCH_SERVICE_ROOT: another checkout whose build is measured instead of this one's (built there; the
// load and the measurement stay this checkout's: ops/bench/same-host.js).
const { spawn } = require('node:child_process');
const { chmodSync, closeSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync } = require('node:fs');
const { tmpdir } = require('node:os');
const { createServer } = require('node:net');
const { join } = require('node:path');
const { setTimeout: sleep } = require('node:timers/promises');
const { ROOT } = require('../setup');
const { serviceArgs } = require('../service-command');
/* global fetch */

const READY_TIMEOUT_MS = 180_000;
const STOP_TIMEOUT_MS = 60_000;

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer().once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** A fresh working folder; 755 so the postgres user that runs the embedded server can traverse it. */
function makeWorkDir() {
  const runDir = join(ROOT, '.test-run');
  const workDir = join(runDir, `bench-${process.pid}`);
  rmSync(workDir, { recursive: true, force: true });
  mkdirSync(workDir, { recursive: true });
  chmodSync(runDir, 0o755);
  chmodSync(workDir, 0o755);
  return workDir;
}

/**
 * EMBEDDED_PG_DIR for the bench's throwaway database: used only as root when the postgres user
 * cannot enter the clone (a private home), and removed with the work folder, never left in /var/lib.
 */
function makePlacementDir() {
  const dir = mkdtempSync(join(tmpdir(), `cp-bench-${process.pid}-`));
  chmodSync(dir, 0o755);
  return dir;
}

async function serviceEnvironment({ dataDir, placementDir, logLevel, databaseUrl, extraEnv = {} }) {
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const env = {
    PATH: process.env.PATH,
    DATA_DIR: dataDir,
    PORT: String(port),
    HOST: '127.0.0.1',
    METRICS_PORT: String(await freePort()),
    EMBEDDED_PG_PORT: String(await freePort()),
    EMBEDDED_PG_DIR: placementDir,
    PUBLIC_BASE_URL: baseUrl,
    LOG_LEVEL: logLevel,
    // BENCH_WORKERS: service processes sharing the port (WORKERS), default 1.
    WORKERS: process.env.BENCH_WORKERS ?? '1',
  };
  if (databaseUrl) env.DATABASE_URL = databaseUrl;
  // OpenTelemetry (DECISIONS 13.2): OTEL_* variables reach the service as given, to measure tracing's cost
  // (OTEL_EXPORTER_OTLP_ENDPOINT on: tracing on; docs/performance.md "Traces").
  for (const [name, value] of Object.entries(process.env)) if (name.startsWith('OTEL_') && value !== undefined) env[name] = value;
  return { env: { ...env, ...extraEnv }, baseUrl };
}

/** Spawns the service (`extraEnv`: variables a bench sets besides these); answers { baseUrl, dataDir, workDir, placementDir, logFile, child, exited, env }. */
async function startService({ logLevel, databaseUrl, extraEnv }) {
  const workDir = makeWorkDir();
  const placementDir = makePlacementDir();
  const dataDir = join(workDir, 'data');
  const logFile = join(workDir, 'service.log');
  const { env, baseUrl } = await serviceEnvironment({ dataDir, placementDir, logLevel, databaseUrl, extraEnv });
  const log = openSync(logFile, 'w');
  // BENCH_SERVICE_NODE_ARGS: extra node flags for the service, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof".
  const nodeArgs = (process.env.BENCH_SERVICE_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const serviceRoot = process.env.BENCH_SERVICE_ROOT || ROOT;
  const child = spawn(process.execPath, serviceArgs(nodeArgs, serviceRoot), { cwd: serviceRoot, env, stdio: ['ignore', log, log] });
  closeSync(log);
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal)));
  return { baseUrl, dataDir, workDir, placementDir, logFile, child, exited, env };
}

async function waitReady(service) {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (service.child.exitCode !== null) throw new Error(`the service exited during start-up:\n${logTail(service)}`);
    const status = await fetch(`${service.baseUrl}/health/ready`).then(
      (response) => response.status,
      () => 'not listening yet',
    );
    if (status === 200) return;
    // 503 means starting (database or HSM not ready yet); any other answer is a broken service.
    if (typeof status === 'number' && status !== 503) throw new Error(`/health/ready answered ${status}:\n${logTail(service)}`);
    await sleep(250);
  }
  throw new Error(`the service was not ready within ${READY_TIMEOUT_MS / 1000} s:\n${logTail(service)}`);
}

/** SIGTERM (graceful shutdown), SIGKILL if it hangs; answers the exit code or signal. */
async function stopService(service) {
  if (service.child.exitCode === null && service.child.signalCode === null) service.child.kill('SIGTERM');
  const timeout = sleep(STOP_TIMEOUT_MS, 'timeout', { ref: false });
  const outcome = await Promise.race([service.exited, timeout]);
  if (outcome !== 'timeout') return outcome;
  service.child.kill('SIGKILL');
  return `killed after ${STOP_TIMEOUT_MS / 1000} s`;
}

function removeWorkDir(service) {
  rmSync(service.workDir, { recursive: true, force: true });
  rmSync(service.placementDir, { recursive: true, force: true });
}

/** The last lines of the service output (each cut short), preferring warnings and errors over access-log lines. */
function logTail(service, count = 8) {
  let lines;
  try {
    lines = readFileSync(service.logFile, 'utf8').trimEnd().split('\n');
  } catch {
    return '(no service output)';
  }
  const notable = lines.filter((line) => !/^\{.*"level":(10|20|30)\b/.test(line));
  return (notable.length > 0 ? notable : lines)
    .slice(-count)
    .map((line) => (line.length > 400 ? `${line.slice(0, 400)}...` : line))
    .join('\n');
}

/** The superuser password the service generated into DATA_DIR for its embedded database. */
function databasePassword(service) {
  return JSON.parse(readFileSync(join(service.dataDir, 'secrets.json'), 'utf8')).embeddedPostgresPassword;
}

/** A client of the service's embedded database (for seeding). */
async function connectDatabase(service) {
  const { Client } = require('pg');
  const client = new Client({
    host: '127.0.0.1',
    port: Number(service.env.EMBEDDED_PG_PORT),
    user: 'postgres',
    password: databasePassword(service),
    database: 'platform',
  });
  await client.connect();
  return client;
}

/**
 * libpq's PG* variables naming `database` on the service's embedded server, over the Unix socket in
 * its cluster directory as the service connects: for another process that should use the same server.
 */
function databaseEnvironment(service, database) {
  return {
    PGHOST: join(service.dataDir, 'postgres'),
    PGPORT: service.env.EMBEDDED_PG_PORT,
    PGUSER: 'postgres',
    PGPASSWORD: databasePassword(service),
    PGDATABASE: database,
  };
}

module.exports = { startService, waitReady, stopService, removeWorkDir, logTail, connectDatabase, databaseEnvironment, freePort };
