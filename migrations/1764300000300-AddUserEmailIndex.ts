import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Users filtered on `emails.value` (co, sw, ew, eq) in a large organization: one trigram index over
 * every address of a user, lower-cased (the expression EMAIL_VALUES of libs/accounts user-search.ts,
 * which the filter adds as a first, indexable condition before the exact one).
 */
export class AddUserEmailIndex1764300000300 implements MigrationInterface {
  name = 'AddUserEmailIndex1764300000300';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE INDEX users_lower_email_values_trgm_idx ON users USING gin (lower(jsonb_path_query_array(emails, '$[*].value')::text) gin_trgm_ops)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP INDEX users_lower_email_values_trgm_idx');
  }
}
