import { DataSource, DataSourceOptions } from 'typeorm';
import { MIGRATIONS } from '../../../migrations';
import type { PostgresConnection } from './embedded-postgres';

/**
 * Every statement is prepared once per connection (Database.query), and each is planned once too.
 * With PostgreSQL's default (`auto`) a statement whose generic plan looks dearer than the plans made
 * for its first five executions is planned again on every execution, for good: that was the case
 * of most of ours (an `= ANY($n)` array of unknown length, `LIMIT $n`), and planning cost more than
 * executing (`npm run bench:cm`: PostgreSQL CPU per `userName eq` search 465 -> 200 µs;
 * docs/decisions.md "Persistence"). Searches keep good plans generically because their total (a
 * window count) reads every match whatever the plan.
 */
export const PLAN_CACHE_MODE = 'force_generic_plan';

/**
 * The single data source definition shared by the service, the CLI and the migration script.
 * The schema comes only from migrations/ (never synchronize). Repositories use explicit,
 * parameterised SQL through this data source: every rule that must hold under concurrency
 * (uniqueness, jti replay, counters, first use) is one atomic statement.
 */
export function dataSourceOptions(target: string | PostgresConnection, poolSize: number): DataSourceOptions {
  return {
    type: 'postgres',
    ...(typeof target === 'string' ? { url: target } : target),
    synchronize: false,
    migrationsRun: false,
    migrations: MIGRATIONS,
    migrationsTableName: 'schema_migrations',
    entities: [],
    logging: false,
    extra: {
      max: poolSize,
      application_name: 'credential-platform',
      // A database that does not answer must not hold requests for ever: a connection is had within
      // 3 s or the request answers 503 (DatabaseUnavailableError).
      connectionTimeoutMillis: 3000,
      // Connections stay open through a lull (pg-pool closes idle ones after 10 s by default):
      // reopening the pool for the next burst made every statement after it dearer (measured in
      // docs/decisions.md, Persistence). max_connections counts the whole pool anyway; a quiet
      // process still gives back what it has not used for five minutes. Keepalives find a
      // connection a network dropped while it was idle.
      idleTimeoutMillis: 300_000,
      keepAlive: true,
      options: `-c plan_cache_mode=${PLAN_CACHE_MODE}`,
    },
  };
}

/** Arbitrary constant for pg_advisory_lock, so that concurrent instances migrate one at a time. */
const MIGRATION_LOCK_ID = 7_400_001;

/** Applies pending migrations under an advisory lock; returns the names applied. */
export async function runMigrations(dataSource: DataSource): Promise<string[]> {
  const lockRunner = dataSource.createQueryRunner();
  await lockRunner.connect();
  try {
    await lockRunner.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_ID]);
    const applied = await dataSource.runMigrations({ transaction: 'each' });
    return applied.map((m) => m.name);
  } finally {
    await lockRunner.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_ID]).catch(() => undefined);
    await lockRunner.release();
  }
}
