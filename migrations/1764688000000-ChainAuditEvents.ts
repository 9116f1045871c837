import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Tamper evidence for the audit log (issue 36, DECISIONS 11.2): each event gets its place in its
 * organization's hash chain (`chain_seq`, `prev_digest`, `digest`), filled in once by the chainer
 * shortly after the event committed; writers insert as before. The append-only trigger now lets
 * exactly that one UPDATE through (chain columns empty before, set after, every other column
 * unchanged) and still refuses every other UPDATE and every DELETE. `audit_chain_heads` is each
 * chain's head and when it was last signed; `audit_checkpoints` holds the signed heads. Events
 * written before this migration are chained by the first pass, in id order.
 */
export class ChainAuditEvents1764688000000 implements MigrationInterface {
  name = 'ChainAuditEvents1764688000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query('ALTER TABLE audit_events ADD COLUMN chain_seq bigint, ADD COLUMN prev_digest text, ADD COLUMN digest text');
    await q.query('CREATE UNIQUE INDEX audit_events_chain_idx ON audit_events (org_id, chain_seq) NULLS NOT DISTINCT WHERE chain_seq IS NOT NULL');
    // The chainer's work list: small, since an event stays in it about a second.
    await q.query('CREATE INDEX audit_events_unchained_idx ON audit_events (id) WHERE digest IS NULL');
    await q.query(`
      CREATE OR REPLACE FUNCTION audit_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        -- The chainer fills in the chain columns once; nothing else may ever change.
        IF TG_OP = 'UPDATE' AND OLD.chain_seq IS NULL AND OLD.prev_digest IS NULL AND OLD.digest IS NULL
           AND NEW.chain_seq IS NOT NULL AND NEW.prev_digest IS NOT NULL AND NEW.digest IS NOT NULL
           AND (to_jsonb(OLD) - 'chain_seq' - 'prev_digest' - 'digest') = (to_jsonb(NEW) - 'chain_seq' - 'prev_digest' - 'digest') THEN
          RETURN NEW;
        END IF;
        RAISE EXCEPTION 'audit_events is append-only';
      END $$`);
    await q.query(`
      CREATE TABLE audit_chain_heads (
        org_id          text UNIQUE NULLS NOT DISTINCT,
        chain_seq       bigint NOT NULL,
        digest          text NOT NULL,
        checkpoint_seq  bigint NOT NULL DEFAULT 0,
        checkpoint_at   timestamptz NOT NULL
      )`);
    await q.query(`
      CREATE TABLE audit_checkpoints (
        id          bigserial PRIMARY KEY,
        org_id      text,
        chain_seq   bigint NOT NULL,
        digest      text NOT NULL,
        signed_at   timestamptz NOT NULL,
        key_id      text NOT NULL,
        signature   text NOT NULL,
        UNIQUE NULLS NOT DISTINCT (org_id, chain_seq)
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP TABLE audit_checkpoints');
    await q.query('DROP TABLE audit_chain_heads');
    await q.query(`
      CREATE OR REPLACE FUNCTION audit_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        RAISE EXCEPTION 'audit_events is append-only';
      END $$`);
    await q.query('DROP INDEX audit_events_unchained_idx');
    await q.query('DROP INDEX audit_events_chain_idx');
    await q.query('ALTER TABLE audit_events DROP COLUMN digest, DROP COLUMN prev_digest, DROP COLUMN chain_seq');
  }
}
