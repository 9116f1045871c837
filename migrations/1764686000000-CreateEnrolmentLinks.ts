import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Enrolment links (DECISIONS 14.4): a person's one-time link to choose a password and enrol a second
 * factor. Only the SHA-256 of the link's 256 random bits is kept. A partial unique index holds at
 * most one open link (neither used nor replaced) per person, so every older link stops working when
 * a new one is made, whoever makes it and however many at once.
 */
export class CreateEnrolmentLinks1764686000000 implements MigrationInterface {
  name = 'CreateEnrolmentLinks1764686000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE enrolment_links (
        id           uuid PRIMARY KEY,
        org_id       text NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
        user_id      uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        token_hash   bytea NOT NULL CHECK (octet_length(token_hash) = 32),
        created_by   text NOT NULL,
        created_at   timestamptz NOT NULL,
        expires_at   timestamptz NOT NULL,
        used_at      timestamptz,
        replaced_at  timestamptz,
        CONSTRAINT enrolment_links_token_hash_key UNIQUE (token_hash),
        CHECK (expires_at > created_at)
      )`);
    await q.query('CREATE UNIQUE INDEX enrolment_links_open_key ON enrolment_links (user_id) WHERE used_at IS NULL AND replaced_at IS NULL');
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP TABLE enrolment_links');
  }
}
