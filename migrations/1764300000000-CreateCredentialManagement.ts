import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The directory half of credential management (CREDENTIAL-MANAGEMENT.md, Issue 12): one wallet per
 * user, the organization's groups, and the search indexes of the Users resource.
 *
 * Group membership stays where access decisions read it, `users.groups` (names, as tokens and the
 * Operator Dependent rule already use them); `user_groups` gives each name an id, a version and a
 * place in the Groups resource. Every name a user carries has its row (the user service asks for it
 * in the transaction that sets the name), so existing names are copied here.
 */
export class CreateCredentialManagement1764300000000 implements MigrationInterface {
  name = 'CreateCredentialManagement1764300000000';

  async up(q: QueryRunner): Promise<void> {
    // What SCIM provisioning clients send beyond the admin API's attributes (CREDENTIAL-MANAGEMENT.md,
    // "Users"): the client's own id for the user, and the profile attributes of RFC 7643 4.1 and the
    // enterprise extension, kept as one validated document.
    await q.query('ALTER TABLE users ADD COLUMN external_id text CHECK (length(external_id) BETWEEN 1 AND 256)');
    await q.query(`ALTER TABLE users ADD COLUMN profile jsonb NOT NULL DEFAULT '{}'::jsonb`);
    await q.query('CREATE INDEX users_org_external_id_idx ON users (org_id, external_id) WHERE external_id IS NOT NULL');
    await q.query(`
      CREATE TABLE wallets (
        id             uuid PRIMARY KEY,
        org_id         text NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
        owner_user_id  uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        status         text NOT NULL DEFAULT 'ACTIVE' CHECK (status IN ('ACTIVE', 'SUSPENDED')),
        notes          text CHECK (length(notes) <= 4000),
        created_at     timestamptz NOT NULL,
        updated_at     timestamptz NOT NULL,
        version        integer NOT NULL DEFAULT 1,
        CONSTRAINT wallets_owner_key UNIQUE (owner_user_id)
      )`);
    await q.query('CREATE INDEX wallets_org_created_idx ON wallets (org_id, created_at, id)');
    await q.query(`INSERT INTO wallets (id, org_id, owner_user_id, created_at, updated_at)
                   SELECT gen_random_uuid(), org_id, id, created_at, created_at FROM users`);

    await q.query(`
      CREATE TABLE user_groups (
        id            uuid PRIMARY KEY,
        org_id        text NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
        display_name  text NOT NULL CHECK (length(display_name) BETWEEN 1 AND 128),
        created_at    timestamptz NOT NULL,
        updated_at    timestamptz NOT NULL,
        version       integer NOT NULL DEFAULT 1,
        CONSTRAINT user_groups_org_name_key UNIQUE (org_id, display_name)
      )`);
    await q.query(`INSERT INTO user_groups (id, org_id, display_name, created_at, updated_at)
                   SELECT gen_random_uuid(), u.org_id, g.group_name, min(u.created_at), min(u.created_at)
                     FROM users u, unnest(u.groups) AS g(group_name) GROUP BY u.org_id, g.group_name`);
    // Members of a group, and Operator Dependent reach: users whose groups contain a name.
    await q.query('CREATE INDEX users_groups_idx ON users USING gin (groups)');

    // userName is unique per organization regardless of case (CREDENTIAL-MANAGEMENT.md "Resources",
    // RFC 7643 4.1.1); the index also serves userName eq/sw filters, which compare lower-cased.
    await q.query('CREATE UNIQUE INDEX users_org_lower_user_name_key ON users (org_id, lower(user_name))');
    // userName co/ew and displayName co by trigram (DECISIONS 9).
    await q.query('CREATE EXTENSION IF NOT EXISTS pg_trgm');
    await q.query('CREATE INDEX users_lower_user_name_trgm_idx ON users USING gin (lower(user_name) gin_trgm_ops)');
    await q.query('CREATE INDEX users_lower_display_name_trgm_idx ON users USING gin (lower(display_name) gin_trgm_ops)');
    await q.query('CREATE INDEX users_org_created_idx ON users (org_id, created_at, id)');
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP INDEX users_org_created_idx');
    await q.query('DROP INDEX users_lower_display_name_trgm_idx');
    await q.query('DROP INDEX users_lower_user_name_trgm_idx');
    await q.query('DROP INDEX users_org_lower_user_name_key');
    await q.query('DROP INDEX users_groups_idx');
    await q.query('DROP TABLE user_groups');
    await q.query('DROP TABLE wallets');
    await q.query('DROP INDEX users_org_external_id_idx');
    await q.query('ALTER TABLE users DROP COLUMN profile');
    await q.query('ALTER TABLE users DROP COLUMN external_id');
  }
}
