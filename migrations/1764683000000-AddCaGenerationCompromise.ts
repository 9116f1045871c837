import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A CA generation believed compromised is revoked (issue 32 item 4; libs/pki README, "Revoking a
 * compromised CA generation"): `compromised_at` on the current generation (then it issues no more
 * until a renewal) and on the retired ones. A compromised generation retires without
 * cross-certificates (no other generation's key may vouch for its key, nor its key for the next),
 * so a retired row holds them unless it is compromised.
 */
export class AddCaGenerationCompromise1764683000000 implements MigrationInterface {
  name = 'AddCaGenerationCompromise1764683000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query('ALTER TABLE certification_authorities ADD COLUMN compromised_at timestamptz');
    await q.query('ALTER TABLE ca_generations ADD COLUMN compromised_at timestamptz, DROP CONSTRAINT ca_generations_check');
    // Only a compromise retires a generation without cross-certificates: such a row kept through a down is one.
    await q.query("UPDATE ca_generations SET compromised_at = updated_at WHERE status = 'retired' AND (old_with_new IS NULL OR new_with_old IS NULL)");
    await q.query(`
      ALTER TABLE ca_generations
        ADD CONSTRAINT ca_generations_check
          CHECK ((status = 'retired') = (certificate IS NOT NULL AND ((old_with_new IS NOT NULL AND new_with_old IS NOT NULL) OR compromised_at IS NOT NULL)))`);
  }

  /**
   * The earlier schema has no compromise: a generation that retired compromised has no
   * cross-certificates, which the earlier CHECK requires of a retired row, so that CHECK comes back
   * NOT VALID (it holds for rows written from then on; `up` knows such a row again by its missing
   * cross-certificates). The leaves stay revoked (cACompromise). A current generation revoked as
   * compromised would issue again under the earlier schema: down refuses until it is renewed.
   */
  async down(q: QueryRunner): Promise<void> {
    const [compromised] = await q.query('SELECT org_id FROM certification_authorities WHERE compromised_at IS NOT NULL LIMIT 1');
    if (compromised) {
      throw new Error(
        `The current CA generation of organization "${compromised.org_id}" is revoked as compromised; renew it (POST /admin/v1/organizations/${compromised.org_id}/ca/renewal) before reverting this migration.`,
      );
    }
    await q.query(`
      ALTER TABLE ca_generations
        DROP CONSTRAINT ca_generations_check,
        DROP COLUMN compromised_at,
        ADD CONSTRAINT ca_generations_check
          CHECK ((status = 'retired') = (certificate IS NOT NULL AND old_with_new IS NOT NULL AND new_with_old IS NOT NULL)) NOT VALID`);
    await q.query('ALTER TABLE certification_authorities DROP COLUMN compromised_at');
  }
}
