import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The audit search `q` without its trigram index (issue 35, DECISIONS 17.1 "Audit search"). Every
 * audit event paid audit_events_search_idx on its insert and again on the chainer's non-HOT update
 * (a token: ~277 us of PostgreSQL time per event with it, 169 without; the chainer's update 225 us
 * against 49-100), while a search is rare. `q` keeps its meaning (AUDIT_SEARCH_TEXT) and is now a
 * filter over the events the other filters select through audit_events_org_time_idx. pg_trgm stays:
 * the users' trigram indexes use it.
 */
export class DropAuditEventSearchIndex1764699000000 implements MigrationInterface {
  name = 'DropAuditEventSearchIndex1764699000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query('DROP INDEX audit_events_search_idx');
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(
      `CREATE INDEX audit_events_search_idx ON audit_events USING gin ((actor || ' ' || coalesce(target, '') || ' ' || coalesce(details::text, '')) gin_trgm_ops)`,
    );
  }
}
