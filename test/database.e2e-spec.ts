import { Database, DatabaseUnavailableError } from '@app/persistence';
import { TestApp, createTestApp, eventually } from '@app/testing';

/**
 * How the service uses its connections: at most DATABASE_POOL_SIZE per process (the change feed's
 * listener among them), each prepared statement planned once (data-source.ts,
 * PLAN_CACHE_MODE; with PostgreSQL's default, a statement such as the user-links lookup, `= ANY($n)`,
 * was planned again on every execution, which cost more than running it), and a transaction's work
 * never waits for a second pooled connection (libs/persistence Database with
 * DATABASE_STRICT_TRANSACTIONS, which the test app turns on: every suite runs under that rule).
 */
describe('database connections', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t.close());

  it('every pooled connection runs with plan_cache_mode force_generic_plan', async () => {
    const db = t.app.get(Database);
    const answers = await Promise.all(Array.from({ length: 8 }, () => db.query<{ plan_cache_mode: string }>('SHOW plan_cache_mode')));
    expect(answers.map(([row]) => row.plan_cache_mode)).toEqual(Array(8).fill('force_generic_plan'));
  });

  it('a prepared statement with an array parameter is planned once, not on each execution', async () => {
    const db = t.app.get(Database);
    const plans = await db.transaction(async (tx) => {
      for (let i = 0; i < 8; i++) await db.query('SELECT id FROM organizations WHERE id = ANY($1::text[])', [[`org-${i}`]], tx);
      return db.query<{ generic_plans: string; custom_plans: string }>(
        "SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement LIKE 'SELECT id FROM organizations WHERE id = ANY%'",
        [],
        tx,
      );
    });
    expect(plans).toEqual([{ generic_plans: '8', custom_plans: '0' }]);
  });

  it('in the test suite, a statement sent to the pool from inside a transaction is refused, not run', async () => {
    const db = t.app.get(Database);
    await expect(db.transaction(async () => db.query("SELECT 'second connection'"))).rejects.toThrow(
      /inside a transaction was sent to the pool instead of the transaction's connection \(pass tx\): SELECT 'second connection'/,
    );
    const [row] = await db.transaction(async (tx) => db.query<{ one: number }>('SELECT 1 AS one', [], tx));
    expect(row).toEqual({ one: 1 });
  });

  it('a connection the server ends while a transaction waits between statements fails that transaction with a 503, and the process lives on', async () => {
    // The embedded PostgreSQL killed while a token's transaction awaited its HSM sign: the server's
    // FATAL arrived on a connection with no statement running, an 'error' event nobody listened to,
    // and the service exited (chaos-kill). pg_terminate_backend sends the same FATAL.
    const db = t.app.get(Database);
    const ended = db.transaction(async (tx) => {
      // Someone listens: an 'error' event without a listener throws out of the socket's callback.
      expect(tx.client.listenerCount('error')).toBeGreaterThan(0);
      const [{ pid }] = await db.query<{ pid: number }>('SELECT pg_backend_pid() AS pid', [], tx);
      const [terminated] = await t.db.query<{ done: boolean }>('SELECT pg_terminate_backend($1) AS done', [pid]).then((r) => r.rows);
      expect(terminated).toEqual({ done: true });
      // Waiting here, as for a sign: the server's message arrives with no statement running.
      await new Promise((resolve) => setTimeout(resolve, 300));
      return db.query('SELECT 1', [], tx);
    });
    await expect(ended).rejects.toBeInstanceOf(DatabaseUnavailableError);
    // The broken connection was not handed back: the next transaction runs.
    const [row] = await db.transaction(async (tx) => db.query<{ one: number }>('SELECT 1 AS one', [], tx));
    expect(row).toEqual({ one: 1 });
  });

  it('a process holds at most DATABASE_POOL_SIZE connections, the change feed listener among them; more work waits for one', async () => {
    const small = await createTestApp({ env: { DATABASE_POOL_SIZE: '3' }, databaseUrl: t.databaseUrl, shareHsmWith: t });
    try {
      const { pool } = small.app.get(Database);
      const work = Promise.all(
        Array.from({ length: 12 }, (_, i) => small.app.get(Database).query<{ i: number }>('SELECT $1::int AS i FROM pg_sleep(0.05)', [i])),
      );
      let settled = false;
      void work.finally(() => (settled = true));
      let most = 0;
      let waited = 0;
      while (!settled) {
        most = Math.max(most, pool.totalCount);
        waited = Math.max(waited, pool.waitingCount);
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      expect((await work).map(([row]) => row.i)).toEqual(Array.from({ length: 12 }, (_, i) => i));
      // Three connections, the listener's included, whatever the twelve statements asked for: the rest waited.
      expect(most).toBe(3);
      expect(waited).toBeGreaterThanOrEqual(8);
    } finally {
      await small.close();
    }
  });

  it('connections stay open through a lull: a pause of 11 s closes none (pg-pool alone closes idle ones after 10 s)', async () => {
    const { pool } = t.app.get(Database);
    await Promise.all(Array.from({ length: 6 }, () => t.app.get(Database).query('SELECT pg_sleep(0.05)')));
    const opened = pool.totalCount;
    expect(opened).toBeGreaterThanOrEqual(6);
    await new Promise((resolve) => setTimeout(resolve, 11_000));
    expect(pool.totalCount).toBe(opened);
    // All but the change feed's listener, which holds its own, are idle once the background jobs' statements
    // (the push sender polls its outbox every 100 ms in the test app) are back: at any instant one may be out.
    await eventually(async () => pool.idleCount === opened - 1, `${opened - 1} idle connections`, 3_000);
    expect(pool.totalCount).toBe(opened);
  }, 30_000);
});
