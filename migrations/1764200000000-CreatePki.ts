import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The issuing CA of each organization and what it issued (CREDENTIAL-MANAGEMENT.md, "PKI"): owned by
 * libs/pki. The CA's key stays in the HSM (`key_label`); the database keeps certificates only.
 * (CA, serial) and (CA, public key) are unique in the database, so parallel issuance can neither
 * repeat a serial nor certify a key twice; CRL numbers come from a sequence, strictly increasing
 * across instances.
 */
export class CreatePki1764200000000 implements MigrationInterface {
  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE certification_authorities (
        org_id         text PRIMARY KEY REFERENCES organizations(id) ON DELETE CASCADE,
        key_label      text NOT NULL UNIQUE,
        key_algorithm  text NOT NULL CHECK (key_algorithm IN ('EC-P256', 'EC-P384', 'RSA-3072')),
        mode           text NOT NULL CHECK (mode IN ('self-signed', 'subordinate')),
        status         text NOT NULL CHECK (status IN ('active', 'awaiting-certificate')),
        subject        text NOT NULL,
        certificate    bytea,
        csr            bytea,
        not_after      timestamptz,
        created_at     timestamptz NOT NULL,
        updated_at     timestamptz NOT NULL,
        version        integer NOT NULL DEFAULT 1,
        CHECK ((status = 'active') = (certificate IS NOT NULL))
      )`);
    await q.query(`
      CREATE TABLE issued_certificates (
        org_id            text NOT NULL REFERENCES certification_authorities(org_id) ON DELETE CASCADE,
        serial            text NOT NULL CHECK (serial ~ '^[0-9a-f]{40}$'),
        user_id           uuid,
        subject           text NOT NULL,
        public_key_sha256 bytea NOT NULL,
        der               bytea NOT NULL,
        not_before        timestamptz NOT NULL,
        not_after         timestamptz NOT NULL,
        status            text NOT NULL DEFAULT 'good' CHECK (status IN ('good', 'revoked', 'on-hold')),
        revoked_at        timestamptz,
        reason            text,
        issued_at         timestamptz NOT NULL,
        PRIMARY KEY (org_id, serial),
        UNIQUE (org_id, public_key_sha256),
        CHECK ((status = 'good') = (revoked_at IS NULL))
      )`);
    await q.query("CREATE INDEX issued_certificates_listed_idx ON issued_certificates (org_id, not_after) WHERE status <> 'good'");
    await q.query('CREATE SEQUENCE pki_crl_number');
    await q.query(`
      CREATE TABLE published_crls (
        org_id       text PRIMARY KEY REFERENCES certification_authorities(org_id) ON DELETE CASCADE,
        crl_number   bigint NOT NULL,
        der          bytea NOT NULL,
        this_update  timestamptz NOT NULL,
        next_update  timestamptz NOT NULL
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP TABLE published_crls');
    await q.query('DROP SEQUENCE pki_crl_number');
    await q.query('DROP TABLE issued_certificates');
    await q.query('DROP TABLE certification_authorities');
  }
}
