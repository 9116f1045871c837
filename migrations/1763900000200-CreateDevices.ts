import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Devices (DECISIONS 8): smart cards and security modules, identified by their {ATR, CUID} pairs.
 * The pairs have their own table so that "a CUID is unique in its organization" is a unique index
 * (two concurrent creates of one CUID: one succeeds, one gets 409), not a check-then-insert.
 */
export class CreateDevices1763900000200 implements MigrationInterface {
  name = 'CreateDevices1763900000200';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE devices (
        id             uuid PRIMARY KEY,
        org_id         text NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
        status         text NOT NULL CHECK (status IN ('AVAILABLE', 'ASSIGNED', 'PRODUCED', 'ISSUED', 'ON_HOLD', 'REVOKED', 'TERMINATED')),
        reason         text NOT NULL CHECK (reason IN ('NONE', 'RECYCLE', 'ASSIGNED', 'LOST', 'STOLEN', 'DAMAGED', 'FORGOTTEN', 'RENEW', 'EXPIRED', 'UNASSIGNED', 'FAILED')),
        -- The cardholder the device is bound to (issuance); its groups are the device's groups for
        -- Operator Dependent roles. Unbound stock devices have none.
        owner_user_id  uuid REFERENCES users(id) ON DELETE SET NULL,
        issued_at      timestamptz,
        created_at     timestamptz NOT NULL,
        updated_at     timestamptz NOT NULL,
        version        integer NOT NULL DEFAULT 1
      )`);
    // The default search order (created, id) within an organization, and the status filters of Stats.
    await q.query('CREATE INDEX devices_org_created_idx ON devices (org_id, created_at, id)');
    await q.query('CREATE INDEX devices_org_status_idx ON devices (org_id, status)');
    await q.query('CREATE INDEX devices_owner_idx ON devices (owner_user_id) WHERE owner_user_id IS NOT NULL');
    await q.query(`
      CREATE TABLE device_external_ids (
        device_id  uuid NOT NULL REFERENCES devices(id) ON DELETE CASCADE,
        org_id     text NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
        position   smallint NOT NULL,
        atr        text NOT NULL CHECK (atr ~ '^([0-9A-F]{2}){2,33}$'),
        cuid       text NOT NULL CHECK (cuid ~ '^[0-9]{1,64}$'),
        PRIMARY KEY (device_id, position),
        CONSTRAINT device_external_ids_org_cuid_key UNIQUE (org_id, cuid)
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP TABLE device_external_ids');
    await q.query('DROP TABLE devices');
  }
}
