import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A session opened with a password alone ends when its organization turns `passwordOnlySignIn` off
 * (DECISIONS 14.2): a new end reason, `sign_in_policy`, and a small partial index that finds an
 * organization's live password-only sessions without reading the record of ended ones. The new
 * CHECK is added NOT VALID and then validated, so that the table stays writable while its rows are
 * checked.
 */
export class EndPasswordOnlySessionsByPolicy1764670000000 implements MigrationInterface {
  name = 'EndPasswordOnlySessionsByPolicy1764670000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      ALTER TABLE sign_in_sessions
        DROP CONSTRAINT sign_in_sessions_end_reason_check,
        ADD CONSTRAINT sign_in_sessions_end_reason_check
          CHECK (end_reason IN ('logout', 'administrator', 'user_disabled', 'password_changed', 'certificate_revoked', 'sign_in_policy')) NOT VALID`);
    await q.query('ALTER TABLE sign_in_sessions VALIDATE CONSTRAINT sign_in_sessions_end_reason_check');
    await q.query(`CREATE INDEX sign_in_sessions_password_only_idx ON sign_in_sessions (org_id) WHERE ended_at IS NULL AND amr = '{pwd}'`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP INDEX sign_in_sessions_password_only_idx');
    // The earlier schema knows no such reason: those sessions were ended on an administrator's decision.
    await q.query(`UPDATE sign_in_sessions SET end_reason = 'administrator' WHERE end_reason = 'sign_in_policy'`);
    await q.query(`
      ALTER TABLE sign_in_sessions
        DROP CONSTRAINT sign_in_sessions_end_reason_check,
        ADD CONSTRAINT sign_in_sessions_end_reason_check
          CHECK (end_reason IN ('logout', 'administrator', 'user_disabled', 'password_changed', 'certificate_revoked'))`);
  }
}
