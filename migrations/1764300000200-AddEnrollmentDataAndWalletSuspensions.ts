import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A user's enrollment data (CREDENTIAL-MANAGEMENT.md "Resources": attributes such as employeeId,
 * objectSid, userPrincipalName, a photo), and which devices a wallet's suspension put on hold, so
 * that resuming the wallet resumes those and leaves on hold a device suspended on its own.
 */
export class AddEnrollmentDataAndWalletSuspensions1764300000200 implements MigrationInterface {
  name = 'AddEnrollmentDataAndWalletSuspensions1764300000200';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE enrollment_data (
        user_id     uuid PRIMARY KEY REFERENCES users(id) ON DELETE CASCADE,
        org_id      text NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
        attributes  jsonb NOT NULL,
        created_at  timestamptz NOT NULL,
        updated_at  timestamptz NOT NULL,
        version     integer NOT NULL DEFAULT 1
      )`);
    await q.query(`ALTER TABLE wallets ADD COLUMN suspended_device_ids uuid[] NOT NULL DEFAULT '{}'`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('ALTER TABLE wallets DROP COLUMN suspended_device_ids');
    await q.query('DROP TABLE enrollment_data');
  }
}
