import 'reflect-metadata';
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { Type } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { Client } from 'pg';
import request from 'supertest';
import TestAgent from 'supertest/lib/agent';
import { Clock } from '@app/common';
import { AppConfig, loadConfig } from '@app/config';
import { Pkcs11Hsm } from '@app/hsm';
import { Metrics, createLoggers } from '@app/observability';
import { AppModule } from '../../apps/api/src/app.module';
import { configureApp, createAdapter } from '../../apps/api/src/app.setup';
import { FakeClock } from './fake-clock';
import { withDatabase } from './global-setup';

export const PLATFORM_ADMIN_SECRET = 'platform-admin-secret-for-tests-0123456789';
export const TEST_APPLICATION_ID = 'com.example.test-suite';

export interface TestApp {
  app: NestFastifyApplication;
  /** Sends Application-ID and Application-Version on every request, as every integrator must (DECISIONS 6). */
  http: TestAgent;
  /** Sends only what the test sets: for the header rules themselves. */
  bare: TestAgent;
  clock: FakeClock;
  config: AppConfig;
  /** A direct connection to this suite's database, for assertions on stored rows. */
  db: Client;
  databaseUrl: string;
  /** Every log line the service wrote, for "no secret in the logs" checks. */
  logs: string[];
  close(): Promise<void>;
}

/** A fresh database copied from the migrated template. */
export async function createSuiteDatabase(): Promise<string> {
  const adminUrl = process.env.TEST_PG_ADMIN_URL!;
  const name = `${process.env.TEST_TEMPLATE_DB}_s${randomBytes(5).toString('hex')}`;
  const admin = new Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name} TEMPLATE ${process.env.TEST_TEMPLATE_DB}`);
  } finally {
    await admin.end();
  }
  return withDatabase(adminUrl, name);
}

/** Configuration as the service would load it, pointed at the run's PostgreSQL and SoftHSM2 token. */
export function testConfig(databaseUrl: string, env: Record<string, string> = {}): AppConfig {
  return loadConfig({
    NODE_ENV: 'test',
    PORT: '0',
    METRICS_PORT: '0',
    LOG_LEVEL: 'info',
    DATA_DIR: process.env.TEST_RUN_DIR!,
    DATABASE_URL: databaseUrl,
    PUBLIC_BASE_URL: 'https://api.example.test',
    AUTH_BASE_URL: 'https://auth.example.test',
    OIP_AUTH_BASE_URL: 'https://oip.example.test',
    OIP_AUTH_HOSTS: 'oip.example.test',
    PKCS11_MODULE: process.env.TEST_PKCS11_MODULE!,
    PKCS11_TOKEN_LABEL: process.env.TEST_PKCS11_TOKEN_LABEL!,
    PKCS11_PIN: process.env.TEST_PKCS11_PIN!,
    SECRET_PEPPER: 'test-pepper-0123456789abcdef0123456789abcdef',
    DATA_ENCRYPTION_KEYS: `k1:${Buffer.alloc(32, 7).toString('base64')}`,
    PLATFORM_ADMIN_SECRET,
    // The platform administrator person of a first start (DECISIONS 11) only where a suite asks for it (test/enrolment).
    PLATFORM_ADMIN_USER: '',
    PURGE_INTERVAL_S: '3600',
    // Suites share one SoftHSM2 token: only the suite that tests it creates the platform's CA key.
    BOOTSTRAP_CA: 'false',
    // No statement inside a transaction may wait for a second pooled connection (libs/persistence Database).
    DATABASE_STRICT_TRANSACTIONS: 'true',
    // The fake notification hub listens on loopback (test/support/push.ts); a short poll keeps suites quick.
    PUSH_LOOPBACK_HUBS: 'true',
    PUSH_POLL_INTERVAL_MS: '100',
    // CIBA ping receivers listen on loopback too (test/ciba.e2e-spec.ts).
    BACKCHANNEL_LOOPBACK_PINGS: 'true',
    // And the audit stream's syslog and webhook receivers (test/audit-stream.e2e-spec.ts).
    AUDIT_STREAM_LOOPBACK: 'true',
    AUDIT_STREAM_POLL_INTERVAL_MS: '100',
    ...env,
  });
}

/**
 * Boots the whole service (AppModule and the same adapter set-up as main.ts) on a fresh database,
 * with a controllable clock. `databaseUrl` reuses a database (restart tests); `shareHsmWith` makes a
 * second instance beside a running one (scale-out tests); `imports` adds test-only modules.
 */
export async function createTestApp(
  options: { env?: Record<string, string>; databaseUrl?: string; clock?: FakeClock; shareHsmWith?: TestApp; imports?: Type[] } = {},
): Promise<TestApp> {
  const databaseUrl = options.databaseUrl ?? (await createSuiteDatabase());
  const config = testConfig(databaseUrl, options.env);
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      logs.push(chunk.toString('utf8'));
      callback();
    },
  });
  const loggers = createLoggers(config.logLevel, sink);
  const { logger } = loggers;
  const metrics = new Metrics();
  const clock = options.clock ?? new FakeClock();
  let builder = Test.createTestingModule({ imports: [AppModule.forRoot(config, logger, metrics), ...(options.imports ?? [])] })
    .overrideProvider(Clock)
    .useValue(clock);
  if (options.shareHsmWith) {
    // One PKCS#11 owner per process (pkcs11.md rule 4): a second instance in this test process
    // borrows the first one's HSM (every read and write reaches the owner's state), and leaves
    // closing it to its owner.
    const owner = options.shareHsmWith.app.get(Pkcs11Hsm);
    const borrowed = new Proxy(owner, { get: (target, property) => (property === 'close' ? async () => undefined : Reflect.get(target, property, target)) });
    builder = builder.overrideProvider(Pkcs11Hsm).useValue(borrowed);
  }
  const moduleRef = await builder.compile();
  const app = moduleRef.createNestApplication<NestFastifyApplication>(createAdapter(config), { logger: false });
  await configureApp(app, config, loggers, metrics);
  await app.init();
  await app.getHttpAdapter().getInstance().ready();
  const db = oneQueryAtATime(new Client({ connectionString: databaseUrl }));
  // A chaos test may cut the database under it; the suite's own client must not crash the run.
  db.on('error', () => undefined);
  await db.connect();
  return {
    app,
    http: request.agent(app.getHttpServer()).set('Application-ID', TEST_APPLICATION_ID).set('Application-Version', '1.0'),
    bare: request(app.getHttpServer()),
    clock,
    config,
    db,
    databaseUrl,
    logs,
    async close() {
      await db.end();
      await app.close();
    },
  };
}

/**
 * The client with its queries sent one after the other, in the order they were asked: suites ask
 * concurrently (fixtures made in Promise.all), which node-postgres 8 queues with a deprecation
 * warning and node-postgres 9 refuses.
 */
function oneQueryAtATime(client: Client): Client {
  const query = client.query.bind(client) as (...args: unknown[]) => Promise<unknown>;
  let previous: Promise<unknown> = Promise.resolve();
  client.query = ((...args: unknown[]) => {
    const next = previous.then(() => query(...args));
    previous = next.catch(() => undefined);
    return next;
  }) as Client['query'];
  return client;
}

/**
 * A scopeAssignment.properties file under the run folder for SCOPE_ASSIGNMENT_FILE: `roles` maps
 * each role to its scopes, in order; the roles named in `operatorDependent` are Operator Dependent.
 */
export function scopeAssignmentFile(name: string, roles: Record<string, string[]>, operatorDependent: string[] = []): string {
  const dir = join(process.env.TEST_RUN_DIR!, 'scope-files');
  mkdirSync(dir, { recursive: true });
  const path = join(dir, name);
  const lines = Object.entries(roles).flatMap(([role, scopes], index) => [
    `roleWithScope.name.${index + 1}=${role}`,
    `roleWithScope.scopes.${index + 1}=${scopes.join(',')}`,
    ...(operatorDependent.includes(role) ? [`roleWithScope.operatorDependent.${index + 1}=true`] : []),
  ]);
  writeFileSync(path, `${lines.join('\n')}\n`);
  return path;
}

/**
 * The scope file of the Operator Dependent suites: Administration, Cardholder, and the Operator
 * Dependent role "Desk East" holding `deskScopes`.
 */
export function operatorDependentScopeFile(name: string, deskScopes: string[] = ['Scope.helpdesk']): string {
  return scopeAssignmentFile(
    name,
    {
      Administration: ['Scope.device_management', 'Scope.helpdesk', 'Scope.configuration_operator'],
      'Desk East': deskScopes,
      Cardholder: ['Scope.device'],
    },
    ['Desk East'],
  );
}
