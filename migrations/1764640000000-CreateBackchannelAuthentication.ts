import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Out-of-band approval, OpenID CIBA Core 1.0 (DECISIONS 16; issue 25 item 4).
 * - A system account is enabled for CIBA by its token delivery mode (`poll` or `ping`; NULL: not
 *   enabled) and, for ping, its client notification endpoint (libs/accounts owns the columns).
 * - `backchannel_requests` (libs/auth): one row per authentication request. `auth_req_id` is stored
 *   only as its keyed hash; `id` is what the person's authenticator app sees. The state moves once,
 *   by atomic UPDATEs: pending -> approved | denied (the app), approved -> issued (the client's poll).
 *   `ping_sealed` holds, sealed with DATA_ENCRYPTION_KEYS, what the ping needs (the auth_req_id and
 *   the client notification token), for ping-mode requests only. `last_polled_at` enforces `interval`.
 */
export class CreateBackchannelAuthentication1764640000000 implements MigrationInterface {
  name = 'CreateBackchannelAuthentication1764640000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      ALTER TABLE system_accounts
        ADD COLUMN backchannel_token_delivery_mode text CHECK (backchannel_token_delivery_mode IN ('poll', 'ping')),
        ADD COLUMN backchannel_client_notification_endpoint text CHECK (char_length(backchannel_client_notification_endpoint) <= 2048),
        ADD CONSTRAINT system_accounts_backchannel_endpoint_for_ping
          CHECK ((backchannel_token_delivery_mode = 'ping') = (backchannel_client_notification_endpoint IS NOT NULL))`);
    await q.query(`
      CREATE TABLE backchannel_requests (
        id                uuid PRIMARY KEY,
        org_id            text NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
        account_id        uuid NOT NULL REFERENCES system_accounts(id) ON DELETE CASCADE,
        client_id         text NOT NULL,
        user_id           uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        auth_req_id_hash  bytea NOT NULL UNIQUE,
        scope             text NOT NULL,
        binding_message   text,
        delivery_mode     text NOT NULL CHECK (delivery_mode IN ('poll', 'ping')),
        ping_sealed       text,
        state             text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'approved', 'denied', 'issued')),
        interval_s        integer NOT NULL CHECK (interval_s > 0),
        created_at        timestamptz NOT NULL,
        expires_at        timestamptz NOT NULL,
        last_polled_at    timestamptz,
        decided_at        timestamptz,
        authenticator_id  uuid,
        CONSTRAINT backchannel_requests_ping_sealed CHECK ((delivery_mode = 'ping') = (ping_sealed IS NOT NULL))
      )`);
    await q.query('CREATE INDEX backchannel_requests_expires_idx ON backchannel_requests (expires_at)');
    await q.query('CREATE INDEX backchannel_requests_user_idx ON backchannel_requests (user_id)');
    await q.query('CREATE INDEX backchannel_requests_account_idx ON backchannel_requests (account_id)');
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP TABLE backchannel_requests');
    await q.query(`
      ALTER TABLE system_accounts
        DROP CONSTRAINT system_accounts_backchannel_endpoint_for_ping,
        DROP COLUMN backchannel_client_notification_endpoint,
        DROP COLUMN backchannel_token_delivery_mode`);
  }
}
