#!/usr/bin/env node
'use strict';
/* global fetch */
// `npm run bench:pki`: the issuing CA of libs/pki on this machine with SoftHSM2 (Issue 13 targets:
// issuance from a P-256 CSR >= 300/s, a 100,000-entry CRL built and signed < 2 s, OCSP >= 3,000
// answers/s), beside the HSM's own signature rate. The service runs in this process on a fresh
// embedded PostgreSQL and SoftHSM2 token (the bootstrap organization's CA, EC P-256); issuance and
// the CRL are timed through the CertificateAuthority port (no HTTP route issues on its own: the
// SyncSession of credential management will), OCSP over HTTP with autocannon in a child process. Medians of
// BENCH_ROUNDS (3) rounds; BENCH_ISSUES (600) certificates per issuance round, BENCH_CONCURRENCY (8).
const { Buffer } = require('node:buffer');
const { chmodSync, mkdtempSync, rmSync } = require('node:fs');
const { randomBytes } = require('node:crypto');
const { execFile } = require('node:child_process');
const { tmpdir } = require('node:os');
const { join } = require('node:path');
const { ROOT, ensureDependencies, ensureDebianPackages, build } = require('../setup');

const rounds = Number(process.env.BENCH_ROUNDS || 3);
const issuesPerRound = Number(process.env.BENCH_ISSUES || 600);
const concurrency = Number(process.env.BENCH_CONCURRENCY || 8);
const CRL_ENTRIES = Number(process.env.BENCH_CRL_ENTRIES || 100_000);
const progress = (message) => process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${message}\n`);

ensureDependencies();
ensureDebianPackages([
  { name: 'softhsm2', binary: 'softhsm2-util' },
  { name: 'opensc', binary: 'pkcs11-tool' },
]);
build();

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const dist = (path) => require(join(ROOT, 'dist', path));

async function main() {
  require('reflect-metadata');
  const work = mkdtempSync(join(tmpdir(), 'pki-bench-'));
  chmodSync(work, 0o755);
  const { ensureSoftHsmToken, generateSoftHsmKey } = dist('libs/hsm/src/softhsm-provisioning');
  const token = { directory: join(work, 'softhsm'), tokenLabel: 'pki-bench', soPin: '12345678', pin: '87654321' };
  const { modulePath } = ensureSoftHsmToken(token);
  generateSoftHsmKey({ ...token, keyLabel: 'JWT_KEY', keyType: 'EC' });
  const { startEmbeddedPostgres } = dist('libs/persistence/src/embedded-postgres');
  const freePort = () =>
    new Promise((resolve) => {
      const server = require('node:net').createServer();
      server.listen(0, '127.0.0.1', () => {
        const { port } = server.address();
        server.close(() => resolve(port));
      });
    });
  const database = await startEmbeddedPostgres({ dataDir: join(work, 'data'), placementDir: work, port: await freePort(), password: 'bench' });
  const port = await freePort();
  const { loadConfig } = dist('libs/config/src/load-config');
  const config = loadConfig({
    NODE_ENV: 'production',
    PORT: String(port),
    HOST: '127.0.0.1',
    METRICS_PORT: '0',
    LOG_LEVEL: 'warn',
    DATA_DIR: join(work, 'data'),
    DATABASE_URL: database.socketUrl, // as the service on its embedded defaults connects
    PUBLIC_BASE_URL: `http://127.0.0.1:${port}`,
    PKCS11_MODULE: modulePath,
    PKCS11_TOKEN_LABEL: token.tokenLabel,
    PKCS11_PIN: token.pin,
    SECRET_PEPPER: 'bench-pepper-0123456789abcdef0123456789abcdef',
    DATA_ENCRYPTION_KEYS: `k1:${Buffer.alloc(32, 3).toString('base64')}`,
    PLATFORM_ADMIN_SECRET: 'bench-admin-secret-0123456789abcdef',
  });
  const { NestFactory } = require('@nestjs/core');
  const { AppModule } = dist('apps/api/src/app.module');
  const { configureApp, createAdapter } = dist('apps/api/src/app.setup');
  const { createLoggers, Metrics } = dist('libs/observability/src/index');
  const loggers = createLoggers('warn');
  const metrics = new Metrics();
  const app = await NestFactory.create(AppModule.forRoot(config, loggers.logger, metrics), createAdapter(config), { logger: false });
  await configureApp(app, config, loggers, metrics);
  await app.listen(port, '127.0.0.1');
  try {
    const { CertificateAuthority } = dist('libs/pki/src/index');
    const { KeyStore } = dist('libs/hsm/src/index');
    const { Database } = dist('libs/persistence/src/index');
    const authority = app.get(CertificateAuthority);
    const keys = app.get(KeyStore);
    const db = app.get(Database);
    const system = { name: 'bench' };
    const subject = { userId: '7d444840-9dc0-11d1-b245-5ffdce74fad2', userName: 'bench.user', displayName: 'Bench User', email: 'bench@example.com' };

    // The HSM's own rate: one CA-key signature (ECDSA P-256, DER) at a time, then 8 at a time.
    const message = Buffer.from('tbsCertificate');
    const signRate = async (parallel) => {
      const total = 4000;
      const started = process.hrtime.bigint();
      let next = 0;
      await Promise.all(
        Array.from({ length: parallel }, async () => {
          while (next++ < total) await keys.sign('CA_KEY/platform', message, { hash: 'SHA-256', encoding: 'der' });
        }),
      );
      return total / (Number(process.hrtime.bigint() - started) / 1e9);
    };
    progress('HSM signature rate...');
    const hsmSerial = median(await Promise.all([signRate(1)]).then(async (a) => [...a, await signRate(1), await signRate(1)]));
    const hsmParallel = median([await signRate(8), await signRate(8), await signRate(8)]);

    // P-256 CSRs, made before the clock starts (a card makes its own).
    const { ocspRequest, p256Csr } = dist('libs/pki/src/testing/index');
    const makeCsrs = (n) => Promise.all(Array.from({ length: n }, p256Csr));
    progress('issuance...');
    const issuanceRates = [];
    let lastSerial;
    for (let round = 0; round < rounds; round++) {
      const csrs = await makeCsrs(issuesPerRound);
      const started = process.hrtime.bigint();
      let next = 0;
      await Promise.all(
        Array.from({ length: concurrency }, async () => {
          while (next < csrs.length) {
            const csr = csrs[next++];
            lastSerial = (await authority.issue('platform', subject, csr, 'Bench Corp', system)).serialNumber;
          }
        }),
      );
      issuanceRates.push(issuesPerRound / (Number(process.hrtime.bigint() - started) / 1e9));
      progress(`issuance round ${round + 1}: ${Math.round(issuanceRates.at(-1))} /s`);
    }

    // 100,000 revoked certificates on the CRL, then each hold/release re-builds and re-signs it.
    await db.query(
      `INSERT INTO issued_certificates (org_id, serial, user_id, subject, public_key_sha256, der, not_before, not_after, status, revoked_at, reason, issued_at)
       SELECT 'platform', 'ee' || lpad(to_hex(i), 38, '0'), NULL, 'CN=bench', decode(lpad(to_hex(i), 64, '0'), 'hex'), '\\x00', now(), now() + interval '1 year',
              'revoked', now(), 'keyCompromise', now()
         FROM generate_series(1, $1) AS i`,
      [CRL_ENTRIES],
    );
    progress('CRL...');
    const crlTimes = [];
    let crlBytes = 0;
    for (let round = 0; round < rounds; round++) {
      for (const change of ['hold', 'release']) {
        const started = process.hrtime.bigint();
        await authority[change]('platform', lastSerial, system);
        crlTimes.push(Number(process.hrtime.bigint() - started) / 1e6);
        progress(`CRL ${change}: ${Math.round(crlTimes.at(-1))} ms`);
      }
    }
    crlBytes = (await authority.crl('platform')).der.length;

    // OCSP over HTTP: one request for an issued certificate ("good"), without a nonce (as RFC 5019
    // clients send it: answered from the pre-produced answer) and with one (signed per request).
    const caCertificate = await authority.caCertificate('platform');
    const requestDer = (nonce) => ocspRequest({ caCertificate, serial: lastSerial, nonce });
    // The load comes from autocannon in a process of its own: in this process it would share the
    // service's event loop and halve what the service can answer.
    const requests = { plain: requestDer(), nonce: requestDer(randomBytes(16)) };
    // The service's CPU per answer: this process hosts it, the load generator is a child.
    const load = async (path, method, { headers = {}, body } = {}) => {
      const cpuBefore = process.cpuUsage();
      const options = { url: `http://127.0.0.1:${port}${path}`, method, headers, bodyBase64: body?.toString('base64'), connections: 32, seconds: 5 };
      const stdout = await new Promise((resolve, reject) =>
        execFile(process.execPath, [join(__dirname, 'autocannon-child.js'), JSON.stringify(options)], { maxBuffer: 16 * 1024 * 1024 }, (error, out) =>
          error ? reject(error) : resolve(out),
        ),
      );
      const cpu = process.cpuUsage(cpuBefore);
      const result = JSON.parse(stdout);
      if (result.non2xx > 0 || result.errors > 0) throw new Error(`${method} ${path}: ${result.non2xx} non-2xx answers and ${result.errors} errors`);
      return { rate: result.requests.average, cpuMicros: (cpu.user + cpu.system) / result.requests.total };
    };
    const OCSP_PATH = '/pki/platform/ocsp';
    const OCSP_HEADERS = { 'content-type': 'application/ocsp-request' };
    // An OCSP error (malformedRequest and the like) is also a 200: before timing anything, each
    // request must get a successful answer, and the one without a nonce the same answer twice.
    const answer = async (body) => {
      const response = await fetch(`http://127.0.0.1:${port}${OCSP_PATH}`, { method: 'POST', headers: OCSP_HEADERS, body });
      const der = Buffer.from(await response.arrayBuffer());
      // OCSPResponse ::= SEQUENCE { responseStatus ENUMERATED (0: successful), responseBytes [0] ... }
      const status = der[1] < 0x80 ? der[4] : der[2 + (der[1] & 0x7f) + 2];
      if (response.status !== 200 || status !== 0) throw new Error(`OCSP set-up: answer ${response.status} with responseStatus ${status}, not successful (0)`);
      return der;
    };
    if (!(await answer(requests.plain)).equals(await answer(requests.plain)))
      throw new Error('OCSP set-up: a request without a nonce was not answered with its pre-produced answer');
    await answer(requests.nonce);
    const ocsp = (body) => () => load(OCSP_PATH, 'POST', { headers: OCSP_HEADERS, body });
    // The floor of this host: the cheapest route (liveness), through the same stack and load.
    const live = () => load('/health/live', 'GET');
    progress('OCSP...');
    const threeRuns = async (run) => {
      await run();
      return [await run(), await run(), await run()];
    };
    const ocspRuns = await threeRuns(ocsp(requests.plain));
    const ocspNonceRuns = await threeRuns(ocsp(requests.nonce));
    const liveRuns = await threeRuns(live);

    const rateAndCpu = (runs) => `${Math.round(median(runs.map((r) => r.rate)))} /s, ${Math.round(median(runs.map((r) => r.cpuMicros)))} us`;
    const rows = [
      ['HSM signature, CA key P-256 DER, 1 at a time', `${Math.round(hsmSerial)} /s`, ''],
      ['HSM signature, CA key P-256 DER, 8 at a time', `${Math.round(hsmParallel)} /s`, ''],
      [`issuance from a P-256 CSR (port, ${concurrency} at a time)`, `${Math.round(median(issuanceRates))} /s`, '>= 300 /s'],
      [
        `CRL of ${CRL_ENTRIES.toLocaleString('en')} entries, built + signed + verified + stored`,
        `${Math.round(median(crlTimes))} ms (${(crlBytes / 1e6).toFixed(1)} MB)`,
        '< 2000 ms',
      ],
      ['OCSP over HTTP (POST, 32 connections), no nonce (pre-produced); CPU/answer', rateAndCpu(ocspRuns), '>= 10000 /s (issue 35)'],
      ['OCSP over HTTP, with a nonce (signed per request); CPU/answer', rateAndCpu(ocspNonceRuns), '>= 3000 /s'],
      ['for scale: GET /health/live, the same stack and load', rateAndCpu(liveRuns), ''],
    ];
    console.log(`\nMachine: ${require('node:os').cpus().length} cores, node ${process.version}; medians of ${rounds} rounds\n`);
    for (const [what, figure, target] of rows) console.log(`${what.padEnd(70)} ${figure.padStart(22)}   ${target}`);
  } finally {
    await app.close();
    await database.stop();
    rmSync(work, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(0),
  (error) => {
    console.error(error);
    process.exit(1);
  },
);
