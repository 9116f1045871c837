import { DataSource, EntityManager } from 'typeorm';

/**
 * Thin access to the pool for repositories: `query` for one statement, `transaction` for several
 * that must commit together. Repositories are the only callers (SQL lives only there).
 */
export class Database {
  constructor(readonly dataSource: DataSource) {}

  async query<T = Record<string, unknown>>(sql: string, parameters: unknown[] = [], manager?: EntityManager): Promise<T[]> {
    const rows = await (manager ?? this.dataSource.manager).query(sql, parameters);
    return rows as T[];
  }

  transaction<T>(work: (manager: EntityManager) => Promise<T>): Promise<T> {
    return this.dataSource.transaction(work);
  }

  /**
   * Runs `work` while holding a session-level advisory lock, so that concurrent instances do it one
   * at a time (bootstrap, purge).
   */
  async withAdvisoryLock<T>(lockId: number, work: () => Promise<T>): Promise<T> {
    const runner = this.dataSource.createQueryRunner();
    await runner.connect();
    try {
      await runner.query('SELECT pg_advisory_lock($1)', [lockId]);
      return await work();
    } finally {
      await runner.query('SELECT pg_advisory_unlock($1)', [lockId]).catch(() => undefined);
      await runner.release();
    }
  }

  async ping(): Promise<boolean> {
    try {
      await this.dataSource.query('SELECT 1');
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
  const candidate = error as { code?: string; driverError?: { code?: string } };
  return candidate?.code === code || candidate?.driverError?.code === code;
}
