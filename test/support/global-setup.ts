import 'reflect-metadata';
import { chmodSync, existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { dataSourceOptions, runMigrations, startEmbeddedPostgres } from '@app/persistence';
import { ensureSoftHsmToken, generateSoftHsmKey } from '@app/hsm';

/**
 * Once per test run: a PostgreSQL (DATABASE_URL when set, else an embedded one under .test-run/),
 * a template database migrated once (each suite copies it), and a fresh SoftHSM2 token holding
 * JWT_KEY. Workers find them through TEST_* environment variables.
 */
export default async function globalSetup(): Promise<void> {
  removeRunsThatDied(resolve(__dirname, '../../.test-run'));
  const runDir = resolve(__dirname, '../../.test-run', `${process.pid}`);
  rmSync(runDir, { recursive: true, force: true });
  mkdirSync(runDir, { recursive: true, mode: 0o755 });
  chmodSync(runDir, 0o755);

  let adminUrl = process.env.DATABASE_URL;
  if (!adminUrl) {
    const port = await freePort();
    const embedded = await startEmbeddedPostgres({ dataDir: runDir, port, password: 'test' });
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
    if (!/^\d+$/.test(entry)) continue;
    try {
      process.kill(Number(entry), 0);
    } catch {
      rmSync(join(root, entry), { recursive: true, force: true });
    }
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
