import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The audit event stream (issue 36 item 2, DECISIONS 11.4). `audit_destinations` are the syslog and
 * webhook receivers an administrator configures, per organization (`org_id`, deleted with it) or for
 * the platform (`org_id` NULL: every event). `audit_outbox` is one row per event and destination,
 * written by a statement trigger on audit_events in the statement that inserts the events, hence in
 * their transaction: every writer (AuditLog and the hot paths' own CTEs) feeds the stream, with no
 * extra round trip, and a rolled-back transaction leaves no row. Without any enabled destination the
 * trigger stops after one probe of an empty partial index.
 */
export class CreateAuditStream1764692000000 implements MigrationInterface {
  name = 'CreateAuditStream1764692000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE audit_destinations (
        id                   bigserial PRIMARY KEY,
        org_id               text REFERENCES organizations (id) ON DELETE CASCADE,
        name                 text NOT NULL,
        type                 text NOT NULL CHECK (type IN ('syslog', 'webhook')),
        url                  text,
        host                 text,
        port                 integer CHECK (port BETWEEN 1 AND 65535),
        enabled              boolean NOT NULL DEFAULT true,
        ca_certificate       text,
        client_certificate   text,
        client_key_key_id    text,
        client_key_sealed    bytea,
        secret_key_id        text,
        secret_sealed        bytea,
        created_at           timestamptz NOT NULL,
        updated_at           timestamptz NOT NULL,
        version              integer NOT NULL DEFAULT 1,
        UNIQUE NULLS NOT DISTINCT (org_id, name),
        CHECK ((type = 'webhook') = (url IS NOT NULL AND secret_sealed IS NOT NULL AND secret_key_id IS NOT NULL)),
        CHECK ((type = 'syslog') = (host IS NOT NULL AND port IS NOT NULL)),
        CHECK ((client_key_key_id IS NULL) = (client_key_sealed IS NULL)),
        CHECK ((client_certificate IS NULL) = (client_key_sealed IS NULL))
      )`);
    await q.query('CREATE INDEX audit_destinations_enabled_idx ON audit_destinations (org_id) WHERE enabled');
    await q.query(`
      CREATE TABLE audit_outbox (
        destination_id  bigint NOT NULL REFERENCES audit_destinations (id) ON DELETE CASCADE,
        event_id        bigint NOT NULL,
        state           text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'deadLettered')),
        attempts        integer NOT NULL DEFAULT 0,
        due_at          timestamptz NOT NULL,
        lease_until     timestamptz,
        last_error      text,
        created_at      timestamptz NOT NULL,
        updated_at      timestamptz NOT NULL,
        delivered_at    timestamptz,
        PRIMARY KEY (destination_id, event_id)
      )`);
    await q.query(`CREATE INDEX audit_outbox_due_idx ON audit_outbox (due_at) WHERE state = 'pending'`);
    await q.query('CREATE INDEX audit_outbox_destination_idx ON audit_outbox (destination_id, state, event_id DESC)');
    await q.query(`
      CREATE FUNCTION audit_events_to_stream() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        -- No destination anywhere: one probe of an empty partial index, nothing else.
        IF NOT EXISTS (SELECT 1 FROM audit_destinations WHERE enabled) THEN
          RETURN NULL;
        END IF;
        -- An organization's destinations get its events; the platform's (org_id NULL) get every event.
        INSERT INTO audit_outbox (destination_id, event_id, due_at, created_at, updated_at)
        SELECT d.id, e.id, e.occurred_at, e.occurred_at, e.occurred_at
          FROM audit_stream_new_events e
          JOIN audit_destinations d ON d.enabled AND (d.org_id = e.org_id OR d.org_id IS NULL);
        RETURN NULL;
      END $$`);
    await q.query(`
      CREATE TRIGGER audit_events_stream AFTER INSERT ON audit_events
      REFERENCING NEW TABLE AS audit_stream_new_events
      FOR EACH STATEMENT EXECUTE FUNCTION audit_events_to_stream()`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP TRIGGER audit_events_stream ON audit_events');
    await q.query('DROP FUNCTION audit_events_to_stream');
    await q.query('DROP TABLE audit_outbox');
    await q.query('DROP TABLE audit_destinations');
  }
}
