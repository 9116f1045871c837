import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Organizations, system accounts and their credentials, issued tokens, assertion jtis, the
 * brute-force counters and the append-only audit log (DECISIONS 2, 3, 4, 11).
 */
export class CreateTokenServiceSchema1763700000000 implements MigrationInterface {
  name = 'CreateTokenServiceSchema1763700000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE organizations (
        id          text PRIMARY KEY CHECK (id ~ '^[A-Za-z0-9_]{1,64}$'),
        name        text NOT NULL,
        settings    jsonb NOT NULL DEFAULT '{}'::jsonb,
        created_at  timestamptz NOT NULL,
        updated_at  timestamptz NOT NULL,
        version     integer NOT NULL DEFAULT 1
      )`);
    await q.query(`
      CREATE TABLE system_accounts (
        id                          uuid PRIMARY KEY,
        org_id                      text NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
        client_id                   text NOT NULL UNIQUE,
        role                        text NOT NULL,
        description                 text,
        organization_administrator  boolean NOT NULL DEFAULT false,
        platform_administrator      boolean NOT NULL DEFAULT false,
        disabled                    boolean NOT NULL DEFAULT false,
        created_at                  timestamptz NOT NULL,
        updated_at                  timestamptz NOT NULL,
        version                     integer NOT NULL DEFAULT 1
      )`);
    await q.query('CREATE INDEX system_accounts_org_idx ON system_accounts (org_id, client_id)');
    await q.query(`
      CREATE TABLE client_secrets (
        id            uuid PRIMARY KEY,
        account_id    uuid NOT NULL REFERENCES system_accounts(id) ON DELETE CASCADE,
        hash          bytea NOT NULL,
        created_at    timestamptz NOT NULL,
        expires_at    timestamptz NOT NULL,
        last_used_at  timestamptz
      )`);
    await q.query('CREATE INDEX client_secrets_account_idx ON client_secrets (account_id)');
    await q.query(`
      CREATE TABLE client_certificates (
        account_id     uuid NOT NULL REFERENCES system_accounts(id) ON DELETE CASCADE,
        thumbprint     text NOT NULL,
        pem            text NOT NULL,
        subject        text NOT NULL,
        issuer         text NOT NULL,
        serial_number  text NOT NULL,
        not_before     timestamptz NOT NULL,
        not_after      timestamptz NOT NULL,
        expires_at     timestamptz NOT NULL,
        created_at     timestamptz NOT NULL,
        PRIMARY KEY (account_id, thumbprint)
      )`);
    await q.query(`
      CREATE TABLE access_tokens (
        jti            uuid PRIMARY KEY,
        org_id         text NOT NULL,
        account_id     uuid REFERENCES system_accounts(id) ON DELETE CASCADE,
        issued_at      timestamptz NOT NULL,
        expires_at     timestamptz NOT NULL,
        first_used_at  timestamptz,
        revoked_at     timestamptz
      )`);
    await q.query('CREATE INDEX access_tokens_expires_idx ON access_tokens (expires_at)');
    await q.query('CREATE INDEX access_tokens_account_idx ON access_tokens (account_id)');
    await q.query(`
      CREATE TABLE assertion_jtis (
        account_id  uuid NOT NULL REFERENCES system_accounts(id) ON DELETE CASCADE,
        jti         text NOT NULL,
        expires_at  timestamptz NOT NULL,
        PRIMARY KEY (account_id, jti)
      )`);
    await q.query('CREATE INDEX assertion_jtis_expires_idx ON assertion_jtis (expires_at)');
    await q.query(`
      CREATE TABLE auth_failures (
        key                text PRIMARY KEY,
        window_started_at  timestamptz NOT NULL,
        failures           integer NOT NULL
      )`);
    await q.query('CREATE INDEX auth_failures_window_idx ON auth_failures (window_started_at)');
    await q.query(`
      CREATE TABLE audit_events (
        id              bigserial PRIMARY KEY,
        occurred_at     timestamptz NOT NULL,
        org_id          text,
        actor           text NOT NULL,
        action          text NOT NULL,
        target          text,
        outcome         text NOT NULL CHECK (outcome IN ('success', 'failure')),
        source_address  text,
        details         jsonb NOT NULL DEFAULT '{}'::jsonb
      )`);
    await q.query('CREATE INDEX audit_events_org_time_idx ON audit_events (org_id, occurred_at)');
    // Append-only in the database itself, not only by convention.
    await q.query(`
      CREATE FUNCTION audit_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        RAISE EXCEPTION 'audit_events is append-only';
      END $$`);
    await q.query(`
      CREATE TRIGGER audit_events_no_change BEFORE UPDATE OR DELETE ON audit_events
      FOR EACH ROW EXECUTE FUNCTION audit_events_append_only()`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP TABLE audit_events');
    await q.query('DROP FUNCTION audit_events_append_only');
    await q.query('DROP TABLE auth_failures');
    await q.query('DROP TABLE assertion_jtis');
    await q.query('DROP TABLE access_tokens');
    await q.query('DROP TABLE client_certificates');
    await q.query('DROP TABLE client_secrets');
    await q.query('DROP TABLE system_accounts');
    await q.query('DROP TABLE organizations');
  }
}
