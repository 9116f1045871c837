import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Content requests (CREDENTIAL-MANAGEMENT.md "ContentRequest lifecycle"): what is to be put on a
 * target device for a wallet, and where that stands. At most one open request (requested, approved or
 * failed, which a retry reopens) per device: a unique partial index, so that two concurrent creations
 * cannot both pass. A deleted device or wallet takes its requests with it (their history stays in
 * the audit log); a device policy is kept while a request names it (its delete checks for open
 * requests under the policy's row lock and otherwise clears the reference).
 */
export class CreateContentRequests1764400000000 implements MigrationInterface {
  name = 'CreateContentRequests1764400000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE content_requests (
        id                 uuid PRIMARY KEY,
        org_id             text NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
        type               text NOT NULL CHECK (type IN ('issuance', 'produce', 'recycle', 'unlock pin', 'update')),
        status             text NOT NULL CHECK (status IN ('requested', 'approved', 'completed', 'denied', 'cancelled', 'failed', 'expired')),
        device_id          uuid NOT NULL REFERENCES devices(id) ON DELETE CASCADE,
        wallet_id          uuid REFERENCES wallets(id) ON DELETE CASCADE,
        device_policy_id   uuid REFERENCES device_policies(id) ON DELETE SET NULL,
        reason             text NOT NULL CHECK (reason IN ('NONE', 'LOST', 'STOLEN', 'DAMAGED', 'FORGOTTEN', 'RENEW', 'EXPIRED')),
        parameters         jsonb NOT NULL DEFAULT '[]',
        requested_by       text NOT NULL,
        requested_by_kind  text NOT NULL CHECK (requested_by_kind IN ('system_account', 'user', 'cli')),
        requested_by_id    text NOT NULL,
        approved_by        text,
        failure_detail     text,
        expires_at         timestamptz NOT NULL,
        created_at         timestamptz NOT NULL,
        updated_at         timestamptz NOT NULL,
        version            integer NOT NULL DEFAULT 1
      )`);
    await q.query(`CREATE UNIQUE INDEX content_requests_open_device_key ON content_requests (device_id) WHERE status IN ('requested', 'approved', 'failed')`);
    await q.query('CREATE INDEX content_requests_org_created_idx ON content_requests (org_id, created_at, id)');
    await q.query('CREATE INDEX content_requests_wallet_idx ON content_requests (wallet_id)');
    await q.query(`CREATE INDEX content_requests_open_expiry_idx ON content_requests (expires_at) WHERE status IN ('requested', 'approved', 'failed')`);
    await q.query(`CREATE INDEX content_requests_policy_idx ON content_requests (device_policy_id) WHERE device_policy_id IS NOT NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP TABLE content_requests');
  }
}
