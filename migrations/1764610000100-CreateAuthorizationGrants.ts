import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The authorization code flow's state (DECISIONS 15): one row per authorization code, which is also
 * the grant (the refresh token family) its redemption starts; the refresh tokens of each grant; and
 * on access tokens the grant they were issued from, so that a replayed code or a reused refresh
 * token revokes everything issued from its grant. Codes and refresh tokens are stored only as keyed
 * hashes. Single use is decided by the database: a code is consumed by
 * `UPDATE ... WHERE code_used_at IS NULL RETURNING`, a refresh token rotated by
 * `UPDATE ... WHERE rotated_at IS NULL RETURNING`. Owned by libs/auth.
 */
export class CreateAuthorizationGrants1764610000100 implements MigrationInterface {
  name = 'CreateAuthorizationGrants1764610000100';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE authorization_grants (
        id               uuid PRIMARY KEY,
        org_id           text NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
        account_id       uuid NOT NULL REFERENCES system_accounts(id) ON DELETE CASCADE,
        user_id          uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        session_id       text NOT NULL,
        code_hash        bytea NOT NULL UNIQUE,
        redirect_uri     text NOT NULL,
        code_challenge   text NOT NULL,
        nonce            text,
        scope            text NOT NULL,
        auth_time        timestamptz NOT NULL,
        amr              text[] NOT NULL,
        refresh_tokens   text NOT NULL CHECK (refresh_tokens IN ('none', 'session', 'offline')),
        created_at       timestamptz NOT NULL,
        code_expires_at  timestamptz NOT NULL,
        code_used_at     timestamptz,
        revoked_at       timestamptz,
        revoked_reason   text,
        expires_at       timestamptz NOT NULL
      )`);
    await q.query('CREATE INDEX authorization_grants_session_idx ON authorization_grants (session_id)');
    await q.query('CREATE INDEX authorization_grants_expires_idx ON authorization_grants (expires_at)');
    await q.query(`
      CREATE TABLE refresh_tokens (
        hash        bytea PRIMARY KEY,
        grant_id    uuid NOT NULL REFERENCES authorization_grants(id) ON DELETE CASCADE,
        issued_at   timestamptz NOT NULL,
        expires_at  timestamptz NOT NULL,
        rotated_at  timestamptz
      )`);
    await q.query('CREATE INDEX refresh_tokens_grant_idx ON refresh_tokens (grant_id)');
    await q.query('ALTER TABLE access_tokens ADD COLUMN grant_id uuid');
    await q.query('CREATE INDEX access_tokens_grant_idx ON access_tokens (grant_id) WHERE grant_id IS NOT NULL');
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('ALTER TABLE access_tokens DROP COLUMN grant_id');
    await q.query('DROP TABLE refresh_tokens');
    await q.query('DROP TABLE authorization_grants');
  }
}
