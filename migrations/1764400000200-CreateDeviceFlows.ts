import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Device flows (CREDENTIAL-MANAGEMENT.md "DeviceFlow"): a guided issuance at a desk, step by step,
 * over the content request it started. Its responses are kept (COLLECT_DATA also becomes the user's
 * enrollment data; ENCODE results without their CSRs).
 */
export class CreateDeviceFlows1764400000200 implements MigrationInterface {
  name = 'CreateDeviceFlows1764400000200';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE device_flows (
        id                  uuid PRIMARY KEY,
        org_id              text NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
        type                text NOT NULL CHECK (type IN ('ASSISTED_ISSUANCE', 'APPLICATIONS_UPDATE', 'REISSUANCE')),
        status              text NOT NULL CHECK (status IN ('IN_PROGRESS', 'COMPLETED', 'FAILED', 'CANCELLED')),
        steps               text[] NOT NULL,
        current_step        text,
        wallet_id           uuid NOT NULL REFERENCES wallets(id) ON DELETE CASCADE,
        device_id           uuid NOT NULL REFERENCES devices(id) ON DELETE CASCADE,
        old_device_id       uuid REFERENCES devices(id) ON DELETE SET NULL,
        content_request_id  uuid NOT NULL REFERENCES content_requests(id) ON DELETE CASCADE,
        printer_id          uuid REFERENCES printers(id) ON DELETE SET NULL,
        responses           jsonb NOT NULL DEFAULT '[]',
        started_by          text NOT NULL,
        created_at          timestamptz NOT NULL,
        updated_at          timestamptz NOT NULL,
        version             integer NOT NULL DEFAULT 1,
        CHECK ((status = 'IN_PROGRESS') = (current_step IS NOT NULL))
      )`);
    await q.query('CREATE INDEX device_flows_org_created_idx ON device_flows (org_id, created_at, id)');
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP TABLE device_flows');
  }
}
