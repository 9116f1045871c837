import { rmSync } from 'node:fs';
import { Client } from 'pg';
import type { EmbeddedPostgresHandle } from '@app/persistence';

export default async function globalTeardown(): Promise<void> {
  const embedded = (globalThis as Record<string, unknown>).__embeddedPostgres as EmbeddedPostgresHandle | undefined;
  if (embedded) {
    await embedded.stop();
  } else if (process.env.TEST_PG_ADMIN_URL) {
    // External PostgreSQL: drop what this run created.
    const admin = new Client({ connectionString: process.env.TEST_PG_ADMIN_URL });
    await admin.connect();
    const { rows } = await admin.query<{ datname: string }>(`SELECT datname FROM pg_database WHERE datname LIKE $1`, [`cp_%_${process.pid}%`]);
    for (const { datname } of rows) await admin.query(`DROP DATABASE IF EXISTS "${datname}" WITH (FORCE)`);
    await admin.end();
  }
  if (process.env.TEST_RUN_DIR) rmSync(process.env.TEST_RUN_DIR, { recursive: true, force: true });
  if (process.env.TEST_EMBEDDED_PG_DIR) rmSync(process.env.TEST_EMBEDDED_PG_DIR, { recursive: true, force: true });
}
