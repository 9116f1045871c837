import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Token-signing keys (DECISIONS 12.1): each HSM key the token service signs with or publishes, by
 * its RFC 7638 kid; a next key may carry the time it is to be activated at. Exactly one is active, enforced by a partial unique index, so two concurrent
 * activations cannot both win.
 */
export class CreateSigningKeys1764500000000 implements MigrationInterface {
  name = 'CreateSigningKeys1764500000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE signing_keys (
        kid           text PRIMARY KEY,
        hsm_label     text NOT NULL UNIQUE,
        hsm_key_id    text,
        algorithm     text NOT NULL CHECK (algorithm IN ('ES256', 'RS256')),
        public_jwk    json NOT NULL,
        state         text NOT NULL CHECK (state IN ('next', 'active', 'retired')),
        created_at    timestamptz NOT NULL,
        activate_at   timestamptz,
        activated_at  timestamptz,
        retired_at    timestamptz,
        not_after     timestamptz,
        CHECK ((state = 'retired') = (retired_at IS NOT NULL AND not_after IS NOT NULL))
      )`);
    await q.query(`CREATE UNIQUE INDEX signing_keys_one_active ON signing_keys (state) WHERE state = 'active'`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP TABLE signing_keys');
  }
}
