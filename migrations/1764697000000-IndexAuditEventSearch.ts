import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The audit log's free-text search (issue 37 item 4, DECISIONS 17): `q` matches a substring of the
 * actor, the target or the details (`ILIKE '%q%'` over one expression), which a trigram index
 * answers without reading every event of the organization. The expression here and the one the
 * repository queries (AUDIT_SEARCH_TEXT) must stay the same text for the planner to use the index.
 */
export class IndexAuditEventSearch1764697000000 implements MigrationInterface {
  name = 'IndexAuditEventSearch1764697000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query('CREATE EXTENSION IF NOT EXISTS pg_trgm');
    await q.query(
      `CREATE INDEX audit_events_search_idx ON audit_events USING gin ((actor || ' ' || coalesce(target, '') || ' ' || coalesce(details::text, '')) gin_trgm_ops)`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP INDEX audit_events_search_idx');
  }
}
