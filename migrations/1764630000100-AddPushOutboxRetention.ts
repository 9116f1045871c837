import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Settled push notifications are kept PUSH_RETENTION_DAYS for the administrators' view, then
 * deleted by the senders (DECISIONS 10.5): this index finds them by when they settled, without
 * reading the pending ones.
 */
export class AddPushOutboxRetention1764630000100 implements MigrationInterface {
  name = 'AddPushOutboxRetention1764630000100';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE INDEX push_outbox_settled_idx ON push_outbox (updated_at) WHERE state <> 'pending'`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP INDEX push_outbox_settled_idx');
  }
}
