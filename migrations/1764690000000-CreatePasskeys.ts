import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Passkeys (WebAuthn; DECISIONS 14.5). A passkey is a credential of the domain, type `FIDO2`, on a
 * software-authenticator device in the person's wallet; its WebAuthn part (credential id, COSE public
 * key, signature counter, backup flags, transports, the person's name for it) is a row of `passkeys`
 * beside it (credential management). The ceremonies' challenges (libs/auth) are single use in the
 * database: `used_at` is set by the one UPDATE that may consume them. A person's "must enrol" mark
 * (libs/accounts) sends them to the factor step after their password. Sessions may now record `user`
 * (RFC 8176: a passkey's user verification, for a sign-in with the passkey alone).
 */
export class CreatePasskeys1764690000000 implements MigrationInterface {
  name = 'CreatePasskeys1764690000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query('ALTER TABLE credentials DROP CONSTRAINT credentials_type_check');
    await q.query(`ALTER TABLE credentials ADD CONSTRAINT credentials_type_check
      CHECK (type IN ('PKI_CERTIFICATE', 'OATH_TOTP', 'OATH_HOTP', 'STATIC_PASSWORD', 'FIDO2'))`);
    await q.query(`
      CREATE TABLE passkeys (
        credential_id    uuid PRIMARY KEY REFERENCES credentials(id) ON DELETE CASCADE,
        org_id           text NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
        webauthn_id      bytea NOT NULL CHECK (octet_length(webauthn_id) BETWEEN 16 AND 1023),
        user_handle      bytea NOT NULL CHECK (octet_length(user_handle) BETWEEN 1 AND 64),
        public_key       bytea NOT NULL,
        sign_count       bigint NOT NULL CHECK (sign_count >= 0),
        backup_eligible  boolean NOT NULL,
        backup_state     boolean NOT NULL,
        transports       text[] NOT NULL,
        name             text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 64),
        created_at       timestamptz NOT NULL,
        last_used_at     timestamptz,
        CONSTRAINT passkeys_webauthn_id_key UNIQUE (org_id, webauthn_id)
      )`);
    await q.query(`
      CREATE TABLE webauthn_challenges (
        id          uuid PRIMARY KEY,
        org_id      text NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
        user_id     uuid REFERENCES users(id) ON DELETE CASCADE,
        purpose     text NOT NULL CHECK (purpose IN ('registration', 'authentication')),
        binding     bytea NOT NULL CHECK (octet_length(binding) = 32),
        challenge   text NOT NULL,
        created_at  timestamptz NOT NULL,
        expires_at  timestamptz NOT NULL,
        used_at     timestamptz,
        CONSTRAINT webauthn_challenges_challenge_key UNIQUE (challenge),
        CHECK (expires_at > created_at)
      )`);
    await q.query('CREATE INDEX webauthn_challenges_expiry_idx ON webauthn_challenges (expires_at)');
    await q.query('ALTER TABLE users ADD COLUMN must_enrol_second_factor boolean NOT NULL DEFAULT false');
    await q.query('ALTER TABLE sign_in_sessions DROP CONSTRAINT sign_in_sessions_amr_check');
    await q.query(`ALTER TABLE sign_in_sessions ADD CONSTRAINT sign_in_sessions_amr_check
      CHECK (cardinality(amr) > 0 AND amr <@ ARRAY['pwd', 'otp', 'sc', 'hwk', 'user'])`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DELETE FROM sign_in_sessions WHERE 'user' = ANY(amr)`);
    await q.query('ALTER TABLE sign_in_sessions DROP CONSTRAINT sign_in_sessions_amr_check');
    await q.query(`ALTER TABLE sign_in_sessions ADD CONSTRAINT sign_in_sessions_amr_check
      CHECK (cardinality(amr) > 0 AND amr <@ ARRAY['pwd', 'otp', 'sc', 'hwk'])`);
    await q.query('ALTER TABLE users DROP COLUMN must_enrol_second_factor');
    await q.query('DROP TABLE webauthn_challenges');
    await q.query('DROP TABLE passkeys');
    await q.query(`DELETE FROM credentials WHERE type = 'FIDO2'`);
    await q.query('ALTER TABLE credentials DROP CONSTRAINT credentials_type_check');
    await q.query(`ALTER TABLE credentials ADD CONSTRAINT credentials_type_check
      CHECK (type IN ('PKI_CERTIFICATE', 'OATH_TOTP', 'OATH_HOTP', 'STATIC_PASSWORD'))`);
  }
}
