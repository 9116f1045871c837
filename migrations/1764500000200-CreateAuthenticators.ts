import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Authenticators (CREDENTIAL-MANAGEMENT.md "Authenticators"; issue 25 item 1): a person's mobile
 * authenticator apps and the single-use challenges that prove possession of their keys. Owned by
 * libs/delivery-gateway; both go with their user (ON DELETE CASCADE), and so with its organization.
 */
export class CreateAuthenticators1764500000200 implements MigrationInterface {
  name = 'CreateAuthenticators1764500000200';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE authenticators (
        id                uuid PRIMARY KEY,
        org_id            text NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
        user_id           uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        display_name      text NOT NULL CHECK (char_length(display_name) BETWEEN 1 AND 64),
        operating_system  text NOT NULL CHECK (operating_system IN ('WINDOWS', 'WINDOWS10', 'WINDOWS11', 'Android', 'iOS12', 'iOS13')),
        push_handle       text NOT NULL CHECK (char_length(push_handle) BETWEEN 1 AND 2048),
        public_key        jsonb NOT NULL,
        thumbprint        text NOT NULL,
        created_at        timestamptz NOT NULL,
        updated_at        timestamptz NOT NULL,
        version           integer NOT NULL DEFAULT 1,
        CONSTRAINT authenticators_org_user_thumbprint_key UNIQUE (org_id, user_id, thumbprint)
      )`);
    await q.query('CREATE INDEX authenticators_user_idx ON authenticators (user_id)');
    await q.query(`
      CREATE TABLE authenticator_challenges (
        org_id      text NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
        user_id     uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        challenge   text NOT NULL,
        created_at  timestamptz NOT NULL,
        expires_at  timestamptz NOT NULL,
        PRIMARY KEY (user_id, challenge)
      )`);
    await q.query('CREATE INDEX authenticator_challenges_expires_idx ON authenticator_challenges (expires_at)');
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP TABLE authenticator_challenges');
    await q.query('DROP TABLE authenticators');
  }
}
