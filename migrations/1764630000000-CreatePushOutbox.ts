import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The push outbox (DECISIONS 10.1; issue 25 item 2): one row per notification and authenticator,
 * written in the transaction of the change that causes it and delivered afterwards by the sender of
 * any instance. Owned by libs/delivery-gateway. `id` is the idempotency key the hub and the app see
 * on every attempt. `due_at` is when a sender may take the row next: claiming moves it one lease
 * ahead, so a row whose sender died is taken again when the lease runs out. A row goes with its
 * person and organization; an authenticator removed meanwhile leaves its rows (for the
 * administrators' view) with no authenticator, and the sender discards the pending ones.
 *
 * `authenticators.stale_since`: set when a hub calls the push handle gone (404/410); a stale
 * authenticator gets no further notification until it is registered again.
 */
export class CreatePushOutbox1764630000000 implements MigrationInterface {
  name = 'CreatePushOutbox1764630000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query('ALTER TABLE authenticators ADD COLUMN stale_since timestamptz');
    await q.query(`
      CREATE TABLE push_outbox (
        id                uuid PRIMARY KEY,
        org_id            text NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
        user_id           uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        authenticator_id  uuid REFERENCES authenticators(id) ON DELETE SET NULL,
        template          text NOT NULL CHECK (template IN ('credential', 'challenge')),
        template_values   jsonb NOT NULL,
        cause             text NOT NULL CHECK (char_length(cause) BETWEEN 1 AND 128),
        state             text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'sent', 'failed', 'deadLettered', 'discarded')),
        attempts          integer NOT NULL DEFAULT 0,
        due_at            timestamptz NOT NULL,
        gateway_id        bigint REFERENCES push_delivery_gateways(id) ON DELETE SET NULL,
        last_status       integer,
        last_error        text,
        created_at        timestamptz NOT NULL,
        updated_at        timestamptz NOT NULL,
        sent_at           timestamptz
      )`);
    // The senders' claim: the due pending rows, oldest due first.
    await q.query(`CREATE INDEX push_outbox_due_idx ON push_outbox (due_at) WHERE state = 'pending'`);
    // The administrators' view: an organization's notifications, newest first.
    await q.query('CREATE INDEX push_outbox_org_created_idx ON push_outbox (org_id, created_at DESC, id)');
    await q.query('CREATE INDEX push_outbox_user_idx ON push_outbox (user_id)');
    await q.query('CREATE INDEX push_outbox_authenticator_idx ON push_outbox (authenticator_id)');
    await q.query('CREATE INDEX push_outbox_gateway_idx ON push_outbox (gateway_id)');
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP TABLE push_outbox');
    await q.query('ALTER TABLE authenticators DROP COLUMN stale_since');
  }
}
