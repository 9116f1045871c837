import { AsyncLocalStorage } from 'node:async_hooks';
import { createHash } from 'node:crypto';
import type { Pool, PoolClient } from 'pg';
import { DataSource } from 'typeorm';
import type { PostgresDriver } from 'typeorm/driver/postgres/PostgresDriver.js';
import { DatabaseUnavailableError, connectionFailureOf } from './database-unavailable';

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

/** How many statement shapes built at run time get a name: each name lives on every connection. */
export const MAX_NAMED_SHAPES = 1000;
const namedShapes = new Map<string, PreparedStatement>();

/**
 * A statement whose text is built from a request's shape (a SCIM filter turned into SQL, every value
 * a parameter): one shape gives one text, so PostgreSQL parses and plans it once per connection
 * instead of on every request (planning a users search costs about four times its execution). The
 * first MAX_NAMED_SHAPES shapes are named; later ones run unnamed, so a client that sends ever new
 * filters cannot grow every connection's memory.
 */
export function preparedShape(text: string): PreparedStatement | string {
  const known = namedShapes.get(text);
  if (known) return known;
  if (namedShapes.size >= MAX_NAMED_SHAPES) return text;
  const statement = prepared(`shape_${createHash('sha1').update(text).digest('hex').slice(0, 24)}`, text);
  namedShapes.set(text, statement);
  return statement;
}

/** A transaction in progress: pass it to repository methods that must commit together. */
export interface Transaction {
  readonly client: PoolClient;
  /**
   * Runs `work` once the transaction has committed (and not at all when it rolls back): what must
   * only follow a committed change, such as telling this instance's own change-feed subscribers
   * (other instances are told by notifyOnCommit).
   */
  afterCommit(work: () => Promise<void>): void;
  /**
   * Runs `work` in the transaction just before its COMMIT: what gathers writes from the whole
   * transaction into one statement (the audit log's rows) registers here.
   */
  beforeCommit(work: () => Promise<void>): void;
  /**
   * NOTIFY `payloads` on `channel`, sent in the COMMIT's own round trip: PostgreSQL delivers them
   * only when the transaction commits, and no statement follows the commit to send them (the
   * change feed's publishOnCommit).
   */
  notifyOnCommit(channel: string, payloads: readonly string[]): void;
}

/**
 * Access to PostgreSQL for repositories (SQL lives only there): `query` for one statement,
 * `transaction` for several that must commit together. Statements go straight to the pg pool of the
 * TypeORM data source: TypeORM owns the connection settings and the migrations, and its query
 * wrapper (which reshapes UPDATE/DELETE results) adds nothing to explicit SQL.
 */
export class Database {
  readonly pool: Pool;
  /** Since when the database has been unreachable; undefined while it answers. */
  private downSince: Date | undefined;
  /** Told once per change of state (down, back), never once per request. */
  onAvailabilityChange: (state: { available: boolean; reason?: string; downForMs?: number }) => void = () => undefined;

  /**
   * Set with `strictTransactions` (DATABASE_STRICT_TRANSACTIONS; the test suite turns it on): a
   * statement sent to the pool from inside a transaction's work then throws instead of running.
   * Such a statement waits for a second connection while its transaction holds one: under load every
   * connection can be held that way, and the pool stalls until its connection timeout (503s). Off by
   * default: it costs a context lookup per statement.
   */
  private readonly strictTransactions?: AsyncLocalStorage<true>;

  constructor(
    readonly dataSource: DataSource,
    options: { strictTransactions?: boolean } = {},
  ) {
    if (options.strictTransactions) this.strictTransactions = new AsyncLocalStorage<true>();
    this.pool = (dataSource.driver as PostgresDriver).master as Pool;
    // An idle connection closed by the server (restart, failover) emits 'error' on the pool; without
    // a listener that would end the process. The pool replaces the connection on next use.
    if (this.pool.listenerCount('error') === 0) this.pool.on('error', () => undefined);
  }

  async query<T = Record<string, unknown>>(sql: string | PreparedStatement, parameters: unknown[] = [], tx?: Transaction): Promise<T[]> {
    const client = tx?.client ?? this.pool;
    if (!tx && this.strictTransactions?.getStore()) {
      throw new Error(
        `A statement inside a transaction was sent to the pool instead of the transaction's connection (pass tx): ${String(typeof sql === 'string' ? sql : sql.text).slice(0, 120)}`,
      );
    }
    try {
      // Every statement is named by its text, so that PostgreSQL parses and plans it once per
      // connection rather than on every call: for the short statements of the issuance path, parsing
      // and planning cost more than executing (bench:issuance).
      const statement = typeof sql === 'string' ? preparedShape(sql) : sql;
      const result =
        typeof statement === 'string'
          ? await client.query(statement, parameters)
          : await client.query({ name: statement.name, text: statement.text, values: parameters });
      if (this.downSince) this.markUp();
      return result.rows as T[];
    } catch (error) {
      throw this.classify(error);
    }
  }

  /**
   * A page of a search and the total matching (SCIM lists and `.search`): `columns` selected over
   * `from` (`FROM ... WHERE ...`), ordered and limited by `page` (ORDER BY, and the LIMIT and OFFSET
   * placeholders, which are the last two of `values`). One statement carries both the page and the
   * total: a window count, which sorting every matching row reads anyway; or, when the order is an
   * index's (`indexOrdered`: the LIMIT stops at the page's last row), a count of its own in a scalar
   * subquery, which the index answers without the rows. The count is asked on its own only when no
   * row can carry it (count 0, or an empty page past the first). Statements are named per shape
   * (preparedShape).
   */
  async searchPage<T>(
    columns: string,
    from: string,
    page: { orderBy: string; limit: string; offset: string; indexOrdered?: boolean; count: number; startIndex: number },
    values: unknown[],
  ): Promise<{ rows: T[]; total: number }> {
    const count = async () => (await this.query<{ n: number }>(preparedShape(`SELECT count(*)::int AS n ${from}`), values.slice(0, -2)))[0].n;
    if (page.count === 0) return { rows: [], total: await count() };
    const total = page.indexOrdered ? `(SELECT count(*)::int ${from})` : 'count(*) OVER ()::int';
    const rows = await this.query<T & { search_total: number }>(
      preparedShape(`SELECT ${columns}, ${total} AS search_total ${from} ORDER BY ${page.orderBy} LIMIT ${page.limit} OFFSET ${page.offset}`),
      values,
    );
    if (rows.length === 0) return { rows: [], total: page.startIndex === 1 ? 0 : await count() };
    return { rows: rows.map(({ search_total: _total, ...row }) => row as unknown as T), total: rows[0].search_total };
  }

  async transaction<T>(work: (tx: Transaction) => Promise<T>): Promise<T> {
    let client: PoolClient;
    try {
      client = await this.pool.connect();
    } catch (error) {
      throw this.classify(error);
    }
    const lost = watchConnection(client);
    let broken: unknown;
    const committed: (() => Promise<void>)[] = [];
    const committing: (() => Promise<void>)[] = [];
    const notices = new Map<string, string[]>();
    let result: T;
    try {
      await client.query('BEGIN');
      const run = async () => {
        const done = await work({
          client,
          afterCommit: (then) => committed.push(then),
          beforeCommit: (last) => committing.push(last),
          notifyOnCommit: (channel, payloads) => {
            const pending = notices.get(channel) ?? [];
            for (const payload of payloads) pending.push(payload);
            if (pending.length > 0) notices.set(channel, pending);
          },
        });
        for (const last of committing) await last();
        return done;
      };
      result = await (this.strictTransactions ? this.strictTransactions.run(true, run) : run());
      // One simple-protocol round trip for the notices and the COMMIT (a failed notice skips the COMMIT: rolled back below).
      // A set-returning SELECT per channel: a select list holds at most 1,664 entries, a change may touch more rows.
      const notify = [...notices].map(
        ([channel, payloads]) =>
          `SELECT pg_notify(${client.escapeLiteral(channel)}, p) FROM unnest(ARRAY[${payloads.map((payload) => client.escapeLiteral(payload)).join(', ')}]::text[]) AS p; `,
      );
      await client.query(`${notify.join('')}COMMIT`);
      if (this.downSince) this.markUp();
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      const classified = this.classify(error);
      if (classified instanceof DatabaseUnavailableError) broken = classified;
      throw classified;
    } finally {
      lost.stop();
      // A connection that failed is destroyed rather than returned to the pool for the next request.
      const failure = broken instanceof Error ? broken : lost.error;
      client.release(failure);
    }
    for (const then of committed) await then();
    return result;
  }

  /** A connection failure becomes DatabaseUnavailableError (503 + Retry-After) and marks the outage; anything else passes unchanged. */
  private classify(error: unknown): unknown {
    const reason = connectionFailureOf(error);
    if (reason === undefined) return error;
    if (!this.downSince) {
      this.downSince = new Date();
      this.onAvailabilityChange({ available: false, reason });
    }
    return error instanceof DatabaseUnavailableError ? error : new DatabaseUnavailableError(reason);
  }

  private markUp(): void {
    const downForMs = Date.now() - this.downSince!.getTime();
    this.downSince = undefined;
    this.onAvailabilityChange({ available: true, downForMs });
  }

  /**
   * Runs `work` while holding a session-level advisory lock, so that concurrent instances do it one
   * at a time (bootstrap).
   */
  async withAdvisoryLock<T>(lockId: number, work: () => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    const lost = watchConnection(client);
    try {
      await client.query('SELECT pg_advisory_lock($1)', [lockId]);
      return await work();
    } finally {
      await client.query('SELECT pg_advisory_unlock($1)', [lockId]).catch(() => undefined);
      lost.stop();
      client.release(lost.error);
    }
  }

  /** For readiness: a round trip, which also ends a recorded outage. */
  async ping(): Promise<boolean> {
    try {
      await this.query('SELECT 1');
      return true;
    } catch {
      return false;
    }
  }
}

/**
 * Listens for the 'error' a checked-out connection emits when the server ends it while no statement
 * is running on it (a transaction waiting on an HSM sign when PostgreSQL is killed: "terminating
 * connection due to unexpected postmaster exit"). The pool listens only to idle connections, and an
 * 'error' event nobody listens to ends the process (chaos-kill saw the service exit). The statement
 * that runs next fails on its own; the error is kept so that the connection is destroyed, not reused.
 */
function watchConnection(client: PoolClient): { readonly error: Error | undefined; stop(): void } {
  let error: Error | undefined;
  const note = (cause: Error): void => {
    error ??= cause;
  };
  client.on('error', note);
  return {
    get error() {
      return error;
    },
    stop: () => client.off('error', note),
  };
}

/** PostgreSQL error codes the repositories translate into domain errors. */
export const PG_UNIQUE_VIOLATION = '23505';
export const PG_FOREIGN_KEY_VIOLATION = '23503';

export function isPgError(error: unknown, code: string): boolean {
  return (error as { code?: string })?.code === code;
}
