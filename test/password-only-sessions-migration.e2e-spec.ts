import { randomBytes, randomUUID } from 'node:crypto';
import { Client } from 'pg';
import type { QueryRunner } from 'typeorm';
import { createSuiteDatabase } from '@app/testing';
import { EndPasswordOnlySessionsByPolicy1764670000000 } from '../migrations/1764670000000-EndPasswordOnlySessionsByPolicy';

/**
 * The migration of the `sign_in_policy` end reason (DECISIONS 14.2): the organization's live
 * password-only sessions are found through its partial index, and a real `down` turns the new reason
 * into `administrator` before the earlier CHECK comes back.
 */
describe('migration EndPasswordOnlySessionsByPolicy', () => {
  let db: Client;
  const migration = new EndPasswordOnlySessionsByPolicy1764670000000();
  const runner = () => ({ query: (sql: string) => db.query(sql).then((result) => result.rows) }) as unknown as QueryRunner;
  const insertSession = (userId: string, amr: string[], endReason: string | null) =>
    db.query(
      `INSERT INTO sign_in_sessions (id, org_id, user_id, secret_hash, amr, auth_time, created_at, last_seen_at, idle_expires_at, absolute_expires_at,
                                     ended_at, end_reason)
       VALUES ($1, 'policy', $2, $3, $4, now(), now(), now(), now() + interval '15 minutes', now() + interval '8 hours',
               CASE WHEN $5::text IS NULL THEN NULL ELSE now() END, $5)`,
      [randomUUID(), userId, randomBytes(32), amr, endReason],
    );

  beforeAll(async () => {
    db = new Client({ connectionString: await createSuiteDatabase() });
    await db.connect();
  });
  afterAll(() => db.end());

  it("finds an organization's live password-only sessions through the partial index", async () => {
    await db.query('BEGIN');
    try {
      await db.query('SET LOCAL enable_seqscan = off');
      const plan = (
        await db.query(
          `EXPLAIN UPDATE sign_in_sessions SET ended_at = now(), end_reason = 'sign_in_policy'
            WHERE org_id = 'policy' AND ended_at IS NULL AND amr = '{pwd}' AND absolute_expires_at > now()`,
        )
      ).rows
        .map((row: Record<string, string>) => row['QUERY PLAN'])
        .join('\n');
      expect(plan).toContain('sign_in_sessions_password_only_idx');
    } finally {
      await db.query('ROLLBACK');
    }
  });

  it('down turns sign_in_policy into administrator and restores the earlier CHECK; up allows it again', async () => {
    await db.query(`INSERT INTO organizations (id, name, created_at, updated_at) VALUES ('policy', 'policy', now(), now())`);
    const userId = randomUUID();
    await db.query(
      `INSERT INTO users (id, org_id, user_name, user_type, role, created_at, updated_at) VALUES ($1, 'policy', 'pat', 'cardholder', 'Cardholder', now(), now())`,
      [userId],
    );
    await insertSession(userId, ['pwd'], 'sign_in_policy');
    await insertSession(userId, ['pwd', 'otp'], 'logout');

    await migration.down(runner());
    expect((await db.query('SELECT end_reason FROM sign_in_sessions ORDER BY end_reason')).rows).toEqual([
      { end_reason: 'administrator' },
      { end_reason: 'logout' },
    ]);
    await expect(insertSession(userId, ['pwd'], 'sign_in_policy')).rejects.toThrow(/sign_in_sessions_end_reason_check/);
    expect((await db.query(`SELECT to_regclass('sign_in_sessions_password_only_idx') AS i`)).rows).toEqual([{ i: null }]);

    await migration.up(runner());
    await insertSession(userId, ['pwd'], 'sign_in_policy');
    await expect(insertSession(userId, ['pwd'], 'expired')).rejects.toThrow(/sign_in_sessions_end_reason_check/);
    expect((await db.query(`SELECT to_regclass('sign_in_sessions_password_only_idx')::text AS i`)).rows).toEqual([{ i: 'sign_in_sessions_password_only_idx' }]);
  });
});
