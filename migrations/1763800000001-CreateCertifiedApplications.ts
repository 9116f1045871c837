import { MigrationInterface, QueryRunner } from 'typeorm';

/** Application-IDs certified per organization, for the `certified` Application-ID policy (DECISIONS 6). */
export class CreateCertifiedApplications1763800000001 implements MigrationInterface {
  name = 'CreateCertifiedApplications1763800000001';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE certified_applications (
        org_id          text NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
        application_id  text NOT NULL CHECK (application_id ~ '^[A-Za-z0-9._-]{1,128}$'),
        name            text,
        created_at      timestamptz NOT NULL,
        PRIMARY KEY (org_id, application_id)
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP TABLE certified_applications');
  }
}
