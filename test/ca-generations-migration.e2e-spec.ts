import { Client } from 'pg';
import type { QueryRunner } from 'typeorm';
import { createSuiteDatabase } from '@app/testing';
import { AddCaGenerations1764500000300 } from '../migrations/1764500000300-AddCaGenerations';

/** The migration of CA generations (CA renewal): a real `down` back to one key per CA, and `up` again. */
describe('migration AddCaGenerations', () => {
  let db: Client;
  const migration = new AddCaGenerations1764500000300();
  const runner = () => ({ query: (sql: string) => db.query(sql).then((result) => result.rows) }) as unknown as QueryRunner;
  const columns = async (table: string) =>
    (await db.query<{ column_name: string }>('SELECT column_name FROM information_schema.columns WHERE table_name = $1', [table])).rows.map(
      (r) => r.column_name,
    );
  const crlKey = async () =>
    (
      await db.query<{ columns: string }>(
        `SELECT string_agg(a.attname, ',' ORDER BY a.attnum) AS columns FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
          WHERE i.indrelid = 'published_crls'::regclass AND i.indisprimary`,
      )
    ).rows[0].columns;

  beforeAll(async () => {
    db = new Client({ connectionString: await createSuiteDatabase() });
    await db.connect();
  });
  afterAll(() => db.end());

  it('down keeps the current generation as the CA and its CRL, drops the rest; up gives every existing row generation 1', async () => {
    await db.query(`INSERT INTO organizations (id, name, created_at, updated_at) VALUES ('renewed', 'renewed', now(), now())`);
    await db.query(
      `INSERT INTO certification_authorities (org_id, key_label, key_algorithm, mode, status, subject, certificate, not_after, created_at, updated_at, generation)
       VALUES ('renewed', 'CA_KEY/renewed/2', 'EC-P256', 'self-signed', 'active', 'CN=x', '\\x01', now() + interval '1 year', now(), now(), 2)`,
    );
    await db.query(
      `INSERT INTO ca_generations (org_id, generation, key_label, key_algorithm, mode, status, subject, certificate, not_after, old_with_new, new_with_old, created_at, updated_at)
       VALUES ('renewed', 1, 'CA_KEY/renewed', 'EC-P256', 'self-signed', 'retired', 'CN=x', '\\x01', now() + interval '1 year', '\\x02', '\\x03', now(), now())`,
    );
    for (const generation of [1, 2]) {
      await db.query(
        `INSERT INTO published_crls (org_id, generation, crl_number, der, this_update, next_update) VALUES ('renewed', $1::int, $1::bigint, '\\x04', now(), now() + interval '7 days')`,
        [generation],
      );
    }
    expect(await crlKey()).toBe('org_id,generation');

    await migration.down(runner());
    expect((await db.query(`SELECT to_regclass('ca_generations') AS t`)).rows).toEqual([{ t: null }]);
    expect(await columns('certification_authorities')).not.toContain('generation');
    expect(await columns('issued_certificates')).not.toContain('generation');
    expect(await columns('published_crls')).not.toContain('generation');
    expect(await crlKey()).toBe('org_id');
    expect((await db.query(`SELECT org_id, crl_number::int AS n FROM published_crls`)).rows).toEqual([{ org_id: 'renewed', n: 2 }]);
    expect((await db.query(`SELECT key_label FROM certification_authorities`)).rows).toEqual([{ key_label: 'CA_KEY/renewed/2' }]);

    await migration.up(runner());
    expect(await crlKey()).toBe('org_id,generation');
    expect((await db.query(`SELECT generation FROM certification_authorities`)).rows).toEqual([{ generation: 1 }]);
    expect((await db.query(`SELECT generation FROM published_crls`)).rows).toEqual([{ generation: 1 }]);
    expect((await db.query(`SELECT count(*)::int AS n FROM ca_generations`)).rows).toEqual([{ n: 0 }]);
  });
});
