import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The code exchange's consumption of a code (`UPDATE authorization_grants SET code_used_at`) changes
 * no indexed column since a grant's keeping time (`expires_at`) is fixed when its code is issued
 * (DECISIONS 15.3), so PostgreSQL can make it a heap-only update: the new row version stays on its
 * page and none of the table's four indexes gets an entry. That needs room on the page: pages are
 * filled to 60% by inserts, leaving the rest for the consumption (and a revocation) of their rows.
 * Rows already stored keep their expires_at (a consumed code's was set at its consumption, an
 * unconsumed one's is its code's expiry), and new pages follow the setting.
 */
export class LeaveRoomForCodeConsumption1764660000000 implements MigrationInterface {
  name = 'LeaveRoomForCodeConsumption1764660000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query('ALTER TABLE authorization_grants SET (fillfactor = 60)');
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('ALTER TABLE authorization_grants RESET (fillfactor)');
  }
}
