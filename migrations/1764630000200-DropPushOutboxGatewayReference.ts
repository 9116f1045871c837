import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `push_outbox.gateway_id` records which gateway a notification's last attempt went through, for
 * the administrators' view: a record, not a reference. Without the foreign key (and the index it
 * needed), deleting a gateway never touches the outbox, an attempt's outcome writes one index
 * entry less, and the gateways' own migration keeps a real `down` (DECISIONS 10.5).
 */
export class DropPushOutboxGatewayReference1764630000200 implements MigrationInterface {
  name = 'DropPushOutboxGatewayReference1764630000200';

  async up(q: QueryRunner): Promise<void> {
    await q.query('ALTER TABLE push_outbox DROP CONSTRAINT push_outbox_gateway_id_fkey');
    await q.query('DROP INDEX push_outbox_gateway_idx');
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('UPDATE push_outbox SET gateway_id = NULL WHERE gateway_id NOT IN (SELECT id FROM push_delivery_gateways)');
    await q.query('CREATE INDEX push_outbox_gateway_idx ON push_outbox (gateway_id)');
    await q.query(
      'ALTER TABLE push_outbox ADD CONSTRAINT push_outbox_gateway_id_fkey FOREIGN KEY (gateway_id) REFERENCES push_delivery_gateways(id) ON DELETE SET NULL',
    );
  }
}
