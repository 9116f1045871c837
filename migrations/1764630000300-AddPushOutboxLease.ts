import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A claim's lease in its own column (DECISIONS 10.1): claiming a notification then changes no
 * indexed column (attempts and lease_until only), so PostgreSQL writes it as a heap-only update
 * without touching the table's indexes, given room on the page (fillfactor 80). Measured with
 * `npm run bench:push` (docs/performance.md, "Push delivery").
 */
export class AddPushOutboxLease1764630000300 implements MigrationInterface {
  name = 'AddPushOutboxLease1764630000300';

  async up(q: QueryRunner): Promise<void> {
    await q.query('ALTER TABLE push_outbox ADD COLUMN lease_until timestamptz');
    await q.query('ALTER TABLE push_outbox SET (fillfactor = 80)');
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('ALTER TABLE push_outbox RESET (fillfactor)');
    await q.query('UPDATE push_outbox SET due_at = lease_until WHERE lease_until > due_at');
    await q.query('ALTER TABLE push_outbox DROP COLUMN lease_until');
  }
}
