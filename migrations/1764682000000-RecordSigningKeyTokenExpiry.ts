import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Token-signing keys know how long their tokens live, and a key can be withdrawn (DECISIONS 12.1,
 * issues 32 and 34): `last_token_expires_at` is the latest expiry any token the key signs may have
 * (the token path reserves it ahead before signing; a token row is inserted only while its key is
 * active and covers its expiry), so a retired key leaves JWKS when its last token expires; each
 * access token row names its key (`kid`, no foreign key: no lock on the key's row per token);
 * `withdrawn_at` and `withdraw_reason` record an emergency withdrawal. The active key of an
 * existing installation signed tokens before expiries were recorded: it gets the longest lifetime
 * (86400 s) from now, which is what the old rule gave.
 */
export class RecordSigningKeyTokenExpiry1764682000000 implements MigrationInterface {
  name = 'RecordSigningKeyTokenExpiry1764682000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      ALTER TABLE signing_keys
        ADD COLUMN last_token_expires_at timestamptz,
        ADD COLUMN withdrawn_at timestamptz,
        ADD COLUMN withdraw_reason text,
        ADD CONSTRAINT signing_keys_withdrawn_check CHECK ((withdrawn_at IS NULL) = (withdraw_reason IS NULL) AND (withdrawn_at IS NULL OR state = 'retired'))`);
    await q.query(`UPDATE signing_keys SET last_token_expires_at = now() + interval '86400 seconds' WHERE state = 'active'`);
    await q.query('ALTER TABLE access_tokens ADD COLUMN kid text');
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('ALTER TABLE access_tokens DROP COLUMN kid');
    await q.query(
      'ALTER TABLE signing_keys DROP CONSTRAINT signing_keys_withdrawn_check, DROP COLUMN withdraw_reason, DROP COLUMN withdrawn_at, DROP COLUMN last_token_expires_at',
    );
  }
}
