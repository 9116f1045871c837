import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * People administer (DECISIONS 11): a user can be their organization's administrator, and one
 * person, a user of the reserved `platform` organization, the platform administrator. "One" is held
 * by the database: a partial unique index admits a single row with the flag, whoever writes.
 */
export class AddUserAdministrators1764620000000 implements MigrationInterface {
  name = 'AddUserAdministrators1764620000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      ALTER TABLE users
        ADD COLUMN organization_administrator boolean NOT NULL DEFAULT false,
        ADD COLUMN platform_administrator boolean NOT NULL DEFAULT false,
        ADD CONSTRAINT users_platform_administrator_in_platform CHECK (NOT platform_administrator OR org_id = 'platform')`);
    await q.query('CREATE UNIQUE INDEX users_one_platform_administrator ON users (platform_administrator) WHERE platform_administrator');
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP INDEX users_one_platform_administrator');
    await q.query(`
      ALTER TABLE users
        DROP CONSTRAINT users_platform_administrator_in_platform,
        DROP COLUMN platform_administrator,
        DROP COLUMN organization_administrator`);
  }
}
