import { Client } from 'pg';
import type { QueryRunner } from 'typeorm';
import { createSuiteDatabase } from '@app/testing';
import { AddCaGenerationCompromise1764683000000 } from '../migrations/1764683000000-AddCaGenerationCompromise';

/**
 * The migration of CA generation compromise (issue 32 item 4): a retired generation holds its
 * cross-certificates unless it retired compromised; a real `down` drops the columns and brings the
 * earlier CHECK back NOT VALID, keeping the rows a compromise wrote.
 */
describe('migration AddCaGenerationCompromise', () => {
  let db: Client;
  const migration = new AddCaGenerationCompromise1764683000000();
  const runner = () => ({ query: (sql: string) => db.query(sql).then((result) => result.rows) }) as unknown as QueryRunner;
  /** A retired generation row; `crosses` false leaves its cross-certificates out. */
  const insertRetired = (generation: number, crosses: boolean, compromised: boolean | undefined) =>
    db.query(
      `INSERT INTO ca_generations (org_id, generation, key_label, key_algorithm, mode, status, subject, certificate, old_with_new, new_with_old, created_at, updated_at
                                   ${compromised === undefined ? '' : ', compromised_at'})
       VALUES ('cacm', $1, $2, 'EC-P256', 'self-signed', 'retired', 'CN=cacm', '\\x30'::bytea, $3, $3, now(), now() ${compromised === undefined ? '' : ', $4'})`,
      [
        generation,
        `CA_KEY/cacm/${generation}`,
        crosses ? Buffer.from('30', 'hex') : null,
        ...(compromised === undefined ? [] : [compromised ? new Date() : null]),
      ],
    );

  beforeAll(async () => {
    db = new Client({ connectionString: await createSuiteDatabase() });
    await db.connect();
    await db.query(`INSERT INTO organizations (id, name, created_at, updated_at) VALUES ('cacm', 'cacm', now(), now())`);
    await db.query(
      `INSERT INTO certification_authorities (org_id, key_label, key_algorithm, mode, status, subject, certificate, created_at, updated_at, generation)
       VALUES ('cacm', 'CA_KEY/cacm/9', 'EC-P256', 'self-signed', 'active', 'CN=cacm', '\\x30'::bytea, now(), now(), 9)`,
    );
  });
  afterAll(() => db.end());

  it('a retired generation without cross-certificates is one that retired compromised; down keeps it, up takes it again', async () => {
    await insertRetired(1, false, true);
    await insertRetired(2, true, false);
    await expect(insertRetired(3, false, false)).rejects.toThrow(/ca_generations_check/);

    await migration.down(runner());
    const columns = await db.query(
      "SELECT table_name FROM information_schema.columns WHERE column_name = 'compromised_at' AND table_name IN ('ca_generations', 'certification_authorities')",
    );
    expect(columns.rows).toEqual([]);
    expect((await db.query("SELECT generation FROM ca_generations WHERE org_id = 'cacm' ORDER BY generation")).rows).toEqual([
      { generation: 1 },
      { generation: 2 },
    ]);
    await expect(insertRetired(3, false, undefined)).rejects.toThrow(/ca_generations_check/);
    await insertRetired(3, true, undefined);

    await migration.up(runner());
    // The row that retired compromised is known again by its missing cross-certificates.
    expect((await db.query("SELECT generation FROM ca_generations WHERE org_id = 'cacm' AND compromised_at IS NOT NULL")).rows).toEqual([{ generation: 1 }]);
    await insertRetired(4, false, true);
    await expect(insertRetired(5, false, false)).rejects.toThrow(/ca_generations_check/);
    expect((await db.query("SELECT compromised_at FROM certification_authorities WHERE org_id = 'cacm'")).rows).toEqual([{ compromised_at: null }]);
  });

  it('down refuses while a current generation is revoked as compromised (it would issue again), and says what to do', async () => {
    await db.query("UPDATE certification_authorities SET compromised_at = now() WHERE org_id = 'cacm'");
    await expect(migration.down(runner())).rejects.toThrow('The current CA generation of organization "cacm" is revoked as compromised; renew it');
    expect((await db.query("SELECT count(*)::int AS n FROM information_schema.columns WHERE column_name = 'compromised_at'")).rows).toEqual([{ n: 2 }]);
  });
});
