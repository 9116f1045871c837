import { Client } from 'pg';
import type { QueryRunner } from 'typeorm';
import { createSuiteDatabase } from '@app/testing';
import { CreateDeliveryGateways1763900000100 } from '../migrations/1763900000100-CreateDeliveryGateways';

/**
 * The migration of the push delivery gateways: default gateways for organizations that existed
 * before it (backfill) and for every organization created after it (trigger), and a real `down`.
 */
describe('migration CreateDeliveryGateways', () => {
  let db: Client;
  const migration = new CreateDeliveryGateways1763900000100();
  const runner = () => ({ query: (sql: string) => db.query(sql).then((result) => result.rows) }) as unknown as QueryRunner;

  beforeAll(async () => {
    db = new Client({ connectionString: await createSuiteDatabase() });
    await db.connect();
  });
  afterAll(() => db.end());

  const insertOrganization = (id: string) => db.query(`INSERT INTO organizations (id, name, created_at, updated_at) VALUES ($1, $1, now(), now())`, [id]);
  async function defaultsByOrg(): Promise<Record<string, string[]>> {
    const { rows } = await db.query<{ org_id: string; types: string[] }>(
      `SELECT org_id, array_agg(type ORDER BY id) AS types FROM push_delivery_gateways WHERE is_default GROUP BY org_id ORDER BY org_id`,
    );
    return Object.fromEntries(rows.map((row) => [row.org_id, row.types]));
  }
  const ALL_TYPES = ['CLOUD_WNS_PUSH', 'CLOUD_GCM_PUSH', 'CLOUD_APNS_PUSH'];

  it('down removes everything it made; up gives existing organizations their defaults and new ones get them by trigger', async () => {
    await insertOrganization('before_down');
    expect(await defaultsByOrg()).toEqual({ before_down: ALL_TYPES });

    await migration.down(runner());
    const { rows: left } = await db.query(
      `SELECT tablename FROM pg_tables WHERE tablename IN ('push_delivery_gateways', 'authenticator_policies', 'authenticator_policy_gateways')
       UNION ALL SELECT proname FROM pg_proc WHERE proname = 'create_default_push_delivery_gateways'`,
    );
    expect(left).toEqual([]);
    await insertOrganization('without_gateways_1');
    await insertOrganization('without_gateways_2');

    await migration.up(runner());
    expect(await defaultsByOrg()).toEqual({ before_down: ALL_TYPES, without_gateways_1: ALL_TYPES, without_gateways_2: ALL_TYPES });
    await insertOrganization('after_up');
    expect((await defaultsByOrg()).after_up).toEqual(ALL_TYPES);
    const { rows } = await db.query(
      `SELECT name, supported_operating_systems, connection_string_sealed, version FROM push_delivery_gateways WHERE org_id = 'after_up' ORDER BY id`,
    );
    expect(rows).toEqual([
      { name: 'Default WNS gateway', supported_operating_systems: ['WINDOWS', 'WINDOWS10', 'WINDOWS11'], connection_string_sealed: null, version: 1 },
      { name: 'Default GCM gateway', supported_operating_systems: ['Android'], connection_string_sealed: null, version: 1 },
      { name: 'Default APNS gateway', supported_operating_systems: ['iOS12', 'iOS13'], connection_string_sealed: null, version: 1 },
    ]);
  });
});
