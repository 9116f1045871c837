import 'reflect-metadata';
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { dataSourceOptions, runMigrations, startEmbeddedPostgres } from '@app/persistence';
import { ensureSoftHsmToken, generateSoftHsmKey } from '@app/hsm';

/** Prefix of the run's EMBEDDED_PG_DIR in the temp directory; the pid lets a later run remove it when this one died. */
const PLACEMENT_PREFIX = 'cp-test-';

/**
 * Once per test run: a PostgreSQL (DATABASE_URL when set, else an embedded one under .test-run/),
 * a template database migrated once (each suite copies it), and a fresh SoftHSM2 token holding
 * JWT_KEY. Workers find them through TEST_* environment variables. Run as root from a directory the
 * `postgres` user cannot enter (a clone under a 0700 home), the embedded clusters go to a throwaway
 * EMBEDDED_PG_DIR in the temp directory (TEST_EMBEDDED_PG_DIR), removed at the end of the run.
 * The built service (dist/) that suites start as a real process is compiled here, once, before any
 * worker runs: two suites compiling it in parallel let one load a half-written file of the other.
 */
export default async function globalSetup(): Promise<void> {
  const root = resolve(__dirname, '../..');
  execFileSync(join(root, 'node_modules/.bin/swc'), ['apps', 'libs', 'migrations', '-d', 'dist', '--quiet'], { cwd: root });
  buildPortalWhenStale(join(root, 'portal'));
  removeRunsThatDied(resolve(__dirname, '../../.test-run'));
  const runDir = resolve(__dirname, '../../.test-run', `${process.pid}`);
  rmSync(runDir, { recursive: true, force: true });
  mkdirSync(runDir, { recursive: true, mode: 0o755 });
  chmodSync(runDir, 0o755);
  removePlacementsThatDied();
  const placementDir = mkdtempSync(join(tmpdir(), `${PLACEMENT_PREFIX}${process.pid}-`));
  chmodSync(placementDir, 0o755);
  process.env.TEST_EMBEDDED_PG_DIR = placementDir;

  let adminUrl = process.env.DATABASE_URL;
  if (!adminUrl) {
    const port = await freePort();
    const embedded = await startEmbeddedPostgres({ dataDir: runDir, placementDir, port, password: 'test' });
    (globalThis as Record<string, unknown>).__embeddedPostgres = embedded;
    adminUrl = embedded.url;
  }
  const template = `cp_template_${process.pid}`;
  const admin = new Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${template}`);
  await admin.query(`CREATE DATABASE ${template}`);
  await admin.end();
  const dataSource = new DataSource(dataSourceOptions(withDatabase(adminUrl, template), 2));
  await dataSource.initialize();
  await runMigrations(dataSource);
  await dataSource.destroy();

  const hsm = { directory: join(runDir, 'softhsm'), tokenLabel: 'test-token', soPin: 'test-so-pin', pin: 'test-user-pin' };
  const { modulePath, configPath } = ensureSoftHsmToken(hsm);
  generateSoftHsmKey({ ...hsm, keyLabel: 'JWT_KEY', keyType: 'EC' });
  // The audit log's checkpoint key (DECISIONS 11.2): made here, since SoftHSM reads the token folder only at C_Initialize (pkcs11.md rule 8).
  generateSoftHsmKey({ ...hsm, keyLabel: 'AUDIT_KEY', keyType: 'EC' });

  Object.assign(process.env, {
    TEST_RUN_DIR: runDir,
    TEST_PG_ADMIN_URL: adminUrl,
    TEST_TEMPLATE_DB: template,
    TEST_PKCS11_MODULE: modulePath,
    TEST_PKCS11_TOKEN_LABEL: hsm.tokenLabel,
    TEST_PKCS11_PIN: hsm.pin,
    TEST_PKCS11_SO_PIN: hsm.soPin,
    SOFTHSM2_CONF: configPath,
  });
  writeFileSync(join(runDir, 'env.json'), JSON.stringify({ adminUrl, template }));
}

/** A run killed before its teardown leaves its folder behind; its process id tells whether it is gone. */
function removeRunsThatDied(root: string): void {
  if (!existsSync(root)) return;
  for (const entry of readdirSync(root)) {
    if (/^\d+$/.test(entry) && !alive(Number(entry))) rmSync(join(root, entry), { recursive: true, force: true });
  }
}

/** The same for the throwaway EMBEDDED_PG_DIRs in the temp directory (only this user's). */
function removePlacementsThatDied(): void {
  const uid = process.getuid?.();
  for (const entry of readdirSync(tmpdir())) {
    const pid = new RegExp(`^${PLACEMENT_PREFIX}(\\d+)-`).exec(entry)?.[1];
    const path = join(tmpdir(), entry);
    if (pid && !alive(Number(pid)) && statSync(path).uid === uid) rmSync(path, { recursive: true, force: true });
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export function withDatabase(url: string, database: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${database}`;
  return parsed.toString();
}

function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolvePort(port));
    });
  });
}

/**
 * The browser suites drive the portal as the service serves it (portal/dist): built here when it is
 * missing or older than a source file (`npm test` builds it anyway; this serves `npx jest <file>`).
 */
function buildPortalWhenStale(portal: string): void {
  if (!existsSync(join(portal, 'node_modules', '.bin', 'vite'))) return;
  const built = join(portal, 'dist', 'index.html');
  const newest = (path: string): number =>
    statSync(path).isDirectory() ? Math.max(0, ...readdirSync(path).map((name) => newest(join(path, name)))) : statSync(path).mtimeMs;
  const sources = Math.max(newest(join(portal, 'src')), newest(join(portal, 'index.html')), newest(join(portal, 'package-lock.json')));
  if (existsSync(built) && statSync(built).mtimeMs >= sources) return;
  execFileSync(join(portal, 'node_modules', '.bin', 'openapi-typescript'), ['src/api/openapi.json', '--output', 'src/api/schema.d.ts', '--silent'], {
    cwd: portal,
  });
  execFileSync(join(portal, 'node_modules', '.bin', 'vite'), ['build', '--logLevel', 'warn'], { cwd: portal });
}
