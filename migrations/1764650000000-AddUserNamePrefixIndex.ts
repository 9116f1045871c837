import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The operators' desk searches users as one types (`userName sw "..."`, sorted by userName, 25 a
 * page): a B-tree on the lower-cased userName in code-point order ("C"), whatever the database's
 * collation, so that a prefix is a range of it (filter-sql.ts prefixRange), a page sorted by
 * userName stops at its 25th row, and the total is counted by an index-only scan. The unique index
 * users_org_lower_user_name_key (database collation) keeps deciding uniqueness; the trigram index
 * keeps serving `co` and `ew`.
 */
export class AddUserNamePrefixIndex1764650000000 implements MigrationInterface {
  name = 'AddUserNamePrefixIndex1764650000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query('CREATE INDEX users_org_lower_user_name_prefix_idx ON users (org_id, (lower(user_name) COLLATE "C"))');
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP INDEX users_org_lower_user_name_prefix_idx');
  }
}
