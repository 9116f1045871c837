import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A person's last sign-in (the admin API's `lastSignIn`, DECISIONS 17.x) is the latest `auth_time`
 * among their sessions, ended ones included while their record is kept: this index answers it for a
 * page of users without reading the record of everyone's sessions.
 */
export class IndexSignInSessionsByUserAuthTime1764696000000 implements MigrationInterface {
  name = 'IndexSignInSessionsByUserAuthTime1764696000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query('CREATE INDEX sign_in_sessions_user_auth_time_idx ON sign_in_sessions (user_id, auth_time DESC)');
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP INDEX sign_in_sessions_user_auth_time_idx');
  }
}
