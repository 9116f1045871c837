import type { Pool, PoolClient } from 'pg';
import { DataSource } from 'typeorm';
import type { PostgresDriver } from 'typeorm/driver/postgres/PostgresDriver.js';

/**
 * A statement PostgreSQL parses and plans once per connection and then reuses: for the queries on
 * the hot paths (token issuance, token checks), where parse and plan cost more than the execution.
 */
export interface PreparedStatement {
  readonly name: string;
  readonly text: string;
}

export function prepared(name: string, text: string): PreparedStatement {
  return { name, text };
}

/** A transaction in progress: pass it to repository methods that must commit together. */
export interface Transaction {
  readonly client: PoolClient;
}

/**
 * Access to PostgreSQL for repositories (SQL lives only there): `query` for one statement,
 * `transaction` for several that must commit together. Statements go straight to the pg pool of the
 * TypeORM data source: TypeORM owns the connection settings and the migrations, and its query
 * wrapper (which reshapes UPDATE/DELETE results) adds nothing to explicit SQL.
 */
export class Database {
  readonly pool: Pool;

  constructor(readonly dataSource: DataSource) {
    this.pool = (dataSource.driver as PostgresDriver).master as Pool;
    // An idle connection closed by the server (restart, failover) emits 'error' on the pool; without
    // a listener that would end the process. The pool replaces the connection on next use.
    if (this.pool.listenerCount('error') === 0) this.pool.on('error', () => undefined);
  }

  async query<T = Record<string, unknown>>(sql: string | PreparedStatement, parameters: unknown[] = [], tx?: Transaction): Promise<T[]> {
    const client = tx?.client ?? this.pool;
    const result = typeof sql === 'string' ? await client.query(sql, parameters) : await client.query({ name: sql.name, text: sql.text, values: parameters });
    return result.rows as T[];
  }

  async transaction<T>(work: (tx: Transaction) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      const result = await work({ client });
      await client.query('COMMIT');
      return result;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      client.release();
    }
  }

  /**
   * Runs `work` while holding a session-level advisory lock, so that concurrent instances do it one
   * at a time (bootstrap).
   */
  async withAdvisoryLock<T>(lockId: number, work: () => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    try {
      await client.query('SELECT pg_advisory_lock($1)', [lockId]);
      return await work();
    } finally {
      await client.query('SELECT pg_advisory_unlock($1)', [lockId]).catch(() => undefined);
      client.release();
    }
  }

  async ping(): Promise<boolean> {
    try {
      await this.pool.query('SELECT 1');
      return true;
    } catch {
      return false;
    }
  }
}

/** PostgreSQL error codes the repositories translate into domain errors. */
export const PG_UNIQUE_VIOLATION = '23505';
export const PG_FOREIGN_KEY_VIOLATION = '23503';

export function isPgError(error: unknown, code: string): boolean {
  return (error as { code?: string })?.code === code;
}
