import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Reference data of credential management (CREDENTIAL-MANAGEMENT.md "Reference data"): device
 * policies, card printers and the two global policies. Names are unique per organization whatever
 * their case; a device policy names its groups by id, so renaming a group keeps the policy.
 */
export class CreateReferenceData1764300000100 implements MigrationInterface {
  name = 'CreateReferenceData1764300000100';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE device_policies (
        id                   uuid PRIMARY KEY,
        org_id               text NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
        name                 text NOT NULL CHECK (length(name) BETWEEN 1 AND 128),
        description          text CHECK (length(description) <= 500),
        device_types         text[] NOT NULL DEFAULT '{}',
        credential_types     text[] NOT NULL CHECK (cardinality(credential_types) > 0
                               AND credential_types <@ ARRAY['PKI_CERTIFICATE', 'OATH_TOTP', 'OATH_HOTP', 'STATIC_PASSWORD']),
        group_ids            uuid[] NOT NULL DEFAULT '{}',
        requires_approval    boolean NOT NULL DEFAULT true,
        activation_required  boolean NOT NULL DEFAULT false,
        created_at           timestamptz NOT NULL,
        updated_at           timestamptz NOT NULL,
        version              integer NOT NULL DEFAULT 1
      )`);
    await q.query('CREATE UNIQUE INDEX device_policies_org_name_key ON device_policies (org_id, lower(name))');
    await q.query('CREATE INDEX device_policies_group_ids_idx ON device_policies USING gin (group_ids)');

    await q.query(`
      CREATE TABLE printers (
        id          uuid PRIMARY KEY,
        org_id      text NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
        name        text NOT NULL CHECK (length(name) BETWEEN 1 AND 128),
        model       text CHECK (length(model) <= 128),
        location    text CHECK (length(location) <= 256),
        status      text NOT NULL DEFAULT 'READY' CHECK (status IN ('READY', 'OFFLINE')),
        created_at  timestamptz NOT NULL,
        updated_at  timestamptz NOT NULL,
        version     integer NOT NULL DEFAULT 1
      )`);
    await q.query('CREATE UNIQUE INDEX printers_org_name_key ON printers (org_id, lower(name))');

    // CredentialPolicy and WalletPolicy (global): a row once an administrator writes one; the
    // defaults apply until then (libs/credential-management/src/policies/policy.schema.ts).
    await q.query(`
      CREATE TABLE organization_policies (
        org_id      text NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
        kind        text NOT NULL CHECK (kind IN ('credential', 'wallet')),
        document    jsonb NOT NULL,
        created_at  timestamptz NOT NULL,
        updated_at  timestamptz NOT NULL,
        version     integer NOT NULL DEFAULT 1,
        PRIMARY KEY (org_id, kind)
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP TABLE organization_policies');
    await q.query('DROP TABLE printers');
    await q.query('DROP TABLE device_policies');
  }
}
