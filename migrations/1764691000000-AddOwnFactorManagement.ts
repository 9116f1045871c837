import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A person manages their own second factors (DECISIONS 14.6): a credential may carry the name its
 * person gave it (1-64 characters) and the time it last signed someone in; an enrolment link may be
 * an add-factor ticket (`purpose = 'add_factor'`), short-lived and bound to the browser session that
 * asked for it, which skips the password step. One open link per person and purpose, so an
 * administrator's enrolment link and a person's add-factor ticket do not replace each other. A
 * passkey's name and last use move to its credential (`passkeys.name`, `last_used_at` dropped), so
 * every factor is named and dated in one place (DECISIONS 14.6).
 */
export class AddOwnFactorManagement1764691000000 implements MigrationInterface {
  name = 'AddOwnFactorManagement1764691000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE credentials
      ADD COLUMN name text CHECK (char_length(name) BETWEEN 1 AND 64),
      ADD COLUMN last_used_at timestamptz`);
    await q.query(`ALTER TABLE enrolment_links
      ADD COLUMN purpose text NOT NULL DEFAULT 'enrolment' CHECK (purpose IN ('enrolment', 'add_factor')),
      ADD COLUMN session_id uuid REFERENCES sign_in_sessions(id) ON DELETE CASCADE,
      ADD CONSTRAINT enrolment_links_session_check CHECK ((purpose = 'add_factor') = (session_id IS NOT NULL))`);
    await q.query('DROP INDEX enrolment_links_open_key');
    await q.query('CREATE UNIQUE INDEX enrolment_links_open_key ON enrolment_links (user_id, purpose) WHERE used_at IS NULL AND replaced_at IS NULL');
    // One place for a factor's name and last use (DECISIONS 14.6): the credential's, for passkeys too.
    await q.query('UPDATE credentials c SET name = p.name, last_used_at = p.last_used_at FROM passkeys p WHERE p.credential_id = c.id');
    await q.query('ALTER TABLE passkeys DROP COLUMN name, DROP COLUMN last_used_at');
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('ALTER TABLE passkeys ADD COLUMN name text, ADD COLUMN last_used_at timestamptz');
    await q.query(`UPDATE passkeys p SET name = COALESCE(c.name, 'Passkey'), last_used_at = c.last_used_at FROM credentials c WHERE c.id = p.credential_id`);
    await q.query('ALTER TABLE passkeys ALTER COLUMN name SET NOT NULL, ADD CONSTRAINT passkeys_name_check CHECK (char_length(name) BETWEEN 1 AND 64)');
    await q.query(`DELETE FROM enrolment_links WHERE purpose = 'add_factor'`);
    await q.query('DROP INDEX enrolment_links_open_key');
    await q.query('CREATE UNIQUE INDEX enrolment_links_open_key ON enrolment_links (user_id) WHERE used_at IS NULL AND replaced_at IS NULL');
    await q.query('ALTER TABLE enrolment_links DROP CONSTRAINT enrolment_links_session_check, DROP COLUMN session_id, DROP COLUMN purpose');
    await q.query('ALTER TABLE credentials DROP COLUMN last_used_at, DROP COLUMN name');
  }
}
