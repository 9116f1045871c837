import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * People's browser sessions (DECISIONS 14.2), opened by the hosted login page: the cookie carries 256
 * random bits and only their SHA-256 is stored (unique). A session lives until its idle or absolute
 * expiry or until it is ended (sign-out, an administrator, the user disabled, deleted, their password
 * changed or their certificate revoked); the row stays as the record, with why it ended, until the
 * purge removes it. A smart-card session remembers its certificate, so that revoking it ends the
 * session. And the last time step at which each OATH credential's code was accepted (DECISIONS
 * 14.1), so that a code is accepted once across instances: an UPDATE ... WHERE last_step < step.
 */
export class CreateSignInSessions1764600000000 implements MigrationInterface {
  name = 'CreateSignInSessions1764600000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE sign_in_sessions (
        id                   uuid PRIMARY KEY,
        org_id               text NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
        user_id              uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        secret_hash          bytea NOT NULL UNIQUE CHECK (octet_length(secret_hash) = 32),
        amr                  text[] NOT NULL CHECK (cardinality(amr) > 0 AND amr <@ ARRAY['pwd', 'otp', 'sc', 'hwk']),
        auth_time            timestamptz NOT NULL,
        created_at           timestamptz NOT NULL,
        last_seen_at         timestamptz NOT NULL,
        idle_expires_at      timestamptz NOT NULL,
        absolute_expires_at  timestamptz NOT NULL,
        ended_at             timestamptz,
        end_reason           text CHECK (end_reason IN ('logout', 'administrator', 'user_disabled', 'password_changed', 'certificate_revoked')),
        source_address       text,
        user_agent           text,
        certificate_serial   text,
        CHECK ((ended_at IS NULL) = (end_reason IS NULL))
      )`);
    await q.query('CREATE INDEX sign_in_sessions_user_idx ON sign_in_sessions (user_id) WHERE ended_at IS NULL');
    await q.query(
      'CREATE INDEX sign_in_sessions_certificate_idx ON sign_in_sessions (org_id, certificate_serial) WHERE certificate_serial IS NOT NULL AND ended_at IS NULL',
    );
    await q.query('CREATE INDEX sign_in_sessions_absolute_idx ON sign_in_sessions (absolute_expires_at)');
    await q.query('ALTER TABLE credentials ADD COLUMN oath_last_step bigint');
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('ALTER TABLE credentials DROP COLUMN oath_last_step');
    await q.query('DROP TABLE sign_in_sessions');
  }
}
