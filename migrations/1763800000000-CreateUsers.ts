import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Users of the credential-management API (operators and cardholders, DECISIONS 3.5 and 11): their
 * enrolled certificates, their access tokens (access_tokens gains a user subject beside the system
 * account one) and the jtis of their jwt-bearer assertions.
 */
export class CreateUsers1763800000000 implements MigrationInterface {
  name = 'CreateUsers1763800000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE users (
        id             uuid PRIMARY KEY,
        org_id         text NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
        user_name      text NOT NULL CHECK (user_name ~ '^[A-Za-z0-9._@-]{1,128}$'),
        user_type      text NOT NULL CHECK (user_type IN ('operator', 'cardholder')),
        role           text NOT NULL,
        groups         text[] NOT NULL DEFAULT '{}',
        name           jsonb,
        display_name   text,
        emails         jsonb NOT NULL DEFAULT '[]'::jsonb,
        password_hash  text,
        disabled       boolean NOT NULL DEFAULT false,
        created_at     timestamptz NOT NULL,
        updated_at     timestamptz NOT NULL,
        version        integer NOT NULL DEFAULT 1,
        CONSTRAINT users_org_user_name_key UNIQUE (org_id, user_name)
      )`);
    await q.query(`
      CREATE TABLE user_certificates (
        user_id        uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        thumbprint     text NOT NULL,
        pem            text NOT NULL,
        subject        text NOT NULL,
        issuer         text NOT NULL,
        serial_number  text NOT NULL,
        not_before     timestamptz NOT NULL,
        not_after      timestamptz NOT NULL,
        expires_at     timestamptz NOT NULL,
        created_at     timestamptz NOT NULL,
        PRIMARY KEY (user_id, thumbprint)
      )`);
    await q.query('ALTER TABLE access_tokens ADD COLUMN user_id uuid REFERENCES users(id) ON DELETE CASCADE');
    // Every token has exactly one subject: a system account or a user.
    await q.query('ALTER TABLE access_tokens ADD CONSTRAINT access_tokens_one_subject CHECK ((account_id IS NULL) <> (user_id IS NULL))');
    await q.query('CREATE INDEX access_tokens_user_idx ON access_tokens (user_id)');
    // Replay protection of user assertions (DECISIONS 3.3, 3.5): its own table, so that each jti
    // keeps a real foreign key to its subject and assertion_jtis stays as it is.
    await q.query(`
      CREATE TABLE user_assertion_jtis (
        user_id     uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        jti         text NOT NULL,
        expires_at  timestamptz NOT NULL,
        PRIMARY KEY (user_id, jti)
      )`);
    await q.query('CREATE INDEX user_assertion_jtis_expires_idx ON user_assertion_jtis (expires_at)');
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP TABLE user_assertion_jtis');
    await q.query('DROP INDEX access_tokens_user_idx');
    await q.query('ALTER TABLE access_tokens DROP CONSTRAINT access_tokens_one_subject');
    // Tokens of users have no subject once the column is gone: remove them rather than leave
    // rows that belong to nobody.
    await q.query('DELETE FROM access_tokens WHERE user_id IS NOT NULL');
    await q.query('ALTER TABLE access_tokens DROP COLUMN user_id');
    await q.query('DROP TABLE user_certificates');
    await q.query('DROP TABLE users');
  }
}
