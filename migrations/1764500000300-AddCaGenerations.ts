import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * CA renewal (CREDENTIAL-MANAGEMENT.md, "PKI", renewal): `certification_authorities` stays the
 * organization's current generation, the one that issues; `ca_generations` keeps the others, a
 * renewal awaiting the enterprise root's certificate (at most one) and the retired generations,
 * whose keys still sign their CRLs and OCSP answers, with the two cross-certificates (RFC 4210
 * §4.4: old-with-new, new-with-old) made when the next generation took over. Every issued
 * certificate and published CRL names the generation whose key signed it.
 */
export class AddCaGenerations1764500000300 implements MigrationInterface {
  name = 'AddCaGenerations1764500000300';

  async up(q: QueryRunner): Promise<void> {
    await q.query('ALTER TABLE certification_authorities ADD COLUMN generation integer NOT NULL DEFAULT 1 CHECK (generation >= 1)');
    await q.query(`
      CREATE TABLE ca_generations (
        org_id         text NOT NULL REFERENCES certification_authorities(org_id) ON DELETE CASCADE,
        generation     integer NOT NULL CHECK (generation >= 1),
        key_label      text NOT NULL UNIQUE,
        key_algorithm  text NOT NULL CHECK (key_algorithm IN ('EC-P256', 'EC-P384', 'RSA-3072')),
        mode           text NOT NULL CHECK (mode IN ('self-signed', 'subordinate')),
        status         text NOT NULL CHECK (status IN ('awaiting-certificate', 'retired')),
        subject        text NOT NULL,
        certificate    bytea,
        csr            bytea,
        not_after      timestamptz,
        old_with_new   bytea,
        new_with_old   bytea,
        created_at     timestamptz NOT NULL,
        updated_at     timestamptz NOT NULL,
        version        integer NOT NULL DEFAULT 1,
        PRIMARY KEY (org_id, generation),
        CHECK ((status = 'retired') = (certificate IS NOT NULL AND old_with_new IS NOT NULL AND new_with_old IS NOT NULL)),
        CHECK ((status = 'awaiting-certificate') = (csr IS NOT NULL))
      )`);
    await q.query("CREATE UNIQUE INDEX ca_generations_one_renewal_idx ON ca_generations (org_id) WHERE status = 'awaiting-certificate'");
    await q.query('ALTER TABLE issued_certificates ADD COLUMN generation integer NOT NULL DEFAULT 1');
    await q.query('CREATE INDEX issued_certificates_generation_idx ON issued_certificates (org_id, generation, not_after)');
    await q.query('ALTER TABLE published_crls ADD COLUMN generation integer NOT NULL DEFAULT 1');
    await q.query('ALTER TABLE published_crls DROP CONSTRAINT published_crls_pkey, ADD PRIMARY KEY (org_id, generation)');
  }

  /** Back to one key per CA: the CRLs of later generations go, the current generation's row stays as the CA. */
  async down(q: QueryRunner): Promise<void> {
    await q.query('DELETE FROM published_crls p USING certification_authorities ca WHERE p.org_id = ca.org_id AND p.generation <> ca.generation');
    await q.query('ALTER TABLE published_crls DROP CONSTRAINT published_crls_pkey, ADD PRIMARY KEY (org_id)');
    await q.query('ALTER TABLE published_crls DROP COLUMN generation');
    await q.query('DROP INDEX issued_certificates_generation_idx');
    await q.query('ALTER TABLE issued_certificates DROP COLUMN generation');
    await q.query('DROP TABLE ca_generations');
    await q.query('ALTER TABLE certification_authorities DROP COLUMN generation');
  }
}
