import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A person manages their own second factors (DECISIONS 14.5): a credential may carry the name its
 * person gave it (1-64 characters) and the time it last signed someone in; an enrolment link may be
 * an add-factor ticket (`purpose = 'add_factor'`), short-lived and bound to the browser session that
 * asked for it, which skips the password step. One open link per person and purpose, so an
 * administrator's enrolment link and a person's add-factor ticket do not replace each other.
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
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DELETE FROM enrolment_links WHERE purpose = 'add_factor'`);
    await q.query('DROP INDEX enrolment_links_open_key');
    await q.query('CREATE UNIQUE INDEX enrolment_links_open_key ON enrolment_links (user_id) WHERE used_at IS NULL AND replaced_at IS NULL');
    await q.query('ALTER TABLE enrolment_links DROP CONSTRAINT enrolment_links_session_check, DROP COLUMN session_id, DROP COLUMN purpose');
    await q.query('ALTER TABLE credentials DROP COLUMN last_used_at, DROP COLUMN name');
  }
}
