import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Credentials (CREDENTIAL-MANAGEMENT.md "Resources": a certificate or OATH key on a device, whose
 * status follows the device) and sync sessions (how an approved content request was executed). A
 * request is completed by at most one session: a unique partial index, besides the request's row
 * lock. OATH secrets are stored sealed (AES-256-GCM under DATA_ENCRYPTION_KEYS), never in clear; a
 * certificate credential keeps its certificate (the CA's issued_certificates row is the CA's record).
 */
export class CreateCredentialsAndSyncSessions1764400000100 implements MigrationInterface {
  name = 'CreateCredentialsAndSyncSessions1764400000100';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE sync_sessions (
        id                  uuid PRIMARY KEY,
        org_id              text NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
        content_request_id  uuid NOT NULL REFERENCES content_requests(id) ON DELETE CASCADE,
        outcome             text NOT NULL CHECK (outcome IN ('completed', 'failed')),
        results             jsonb NOT NULL,
        executed_by         text NOT NULL,
        created_at          timestamptz NOT NULL
      )`);
    await q.query(`CREATE UNIQUE INDEX sync_sessions_completed_key ON sync_sessions (content_request_id) WHERE outcome = 'completed'`);
    await q.query(`
      CREATE TABLE credentials (
        id                  uuid PRIMARY KEY,
        org_id              text NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
        type                text NOT NULL CHECK (type IN ('PKI_CERTIFICATE', 'OATH_TOTP', 'OATH_HOTP', 'STATIC_PASSWORD')),
        status              text NOT NULL CHECK (status IN ('ISSUED', 'ON_HOLD', 'REVOKED')),
        device_id           uuid NOT NULL REFERENCES devices(id) ON DELETE CASCADE,
        wallet_id           uuid REFERENCES wallets(id) ON DELETE SET NULL,
        content_request_id  uuid REFERENCES content_requests(id) ON DELETE SET NULL,
        certificate_serial  text,
        certificate         jsonb,
        oath_key_id         text,
        oath_secret         bytea,
        oath_digits         integer,
        oath_period         integer,
        revocation_reason   text,
        expires_at          timestamptz,
        created_at          timestamptz NOT NULL,
        updated_at          timestamptz NOT NULL,
        version             integer NOT NULL DEFAULT 1,
        CHECK ((type = 'PKI_CERTIFICATE') = (certificate_serial IS NOT NULL)),
        CHECK ((type IN ('OATH_TOTP', 'OATH_HOTP')) = (oath_secret IS NOT NULL))
      )`);
    await q.query('CREATE INDEX credentials_device_idx ON credentials (device_id)');
    await q.query('CREATE INDEX credentials_wallet_idx ON credentials (wallet_id) WHERE wallet_id IS NOT NULL');
    await q.query('CREATE UNIQUE INDEX credentials_certificate_key ON credentials (org_id, certificate_serial) WHERE certificate_serial IS NOT NULL');
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP TABLE credentials');
    await q.query('DROP TABLE sync_sessions');
  }
}
