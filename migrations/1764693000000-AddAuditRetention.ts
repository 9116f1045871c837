import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Retention of the audit log (issue 36 item 3, DECISIONS 11.3): each chain that lost its oldest events
 * has a prune point in `audit_prune_points` (`pruned_seq`: the last chain position removed by
 * retention, always a signed checkpoint's position; `pruned_events`: how many were removed in all;
 * `pruned_at`). A table of its own, not columns of audit_chain_heads: the retention job holds its row
 * while it deletes, and the chainer, which updates the heads every second, must not wait for it. The append-only
 * trigger now lets one DELETE through: in a transaction that set `audit.retention_prune = 'on'` (the
 * retention job's, AuditRetention), of a chained row at or below its chain's prune point, where a
 * checkpoint covers it. Every other DELETE and UPDATE is refused as before. A database owner can of
 * course set the same variable (or drop the trigger): the trigger keeps the service's own code and a
 * mistaken statement out, not whoever owns the database; the chain and the checkpoints are what catch those.
 */
export class AddAuditRetention1764693000000 implements MigrationInterface {
  name = 'AddAuditRetention1764693000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE audit_prune_points (
        org_id         text UNIQUE NULLS NOT DISTINCT,
        pruned_seq     bigint NOT NULL,
        pruned_events  bigint NOT NULL,
        pruned_at      timestamptz NOT NULL
      )`);
    await q.query(`
      CREATE OR REPLACE FUNCTION audit_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
      DECLARE
        pruned bigint;
        covered boolean;
      BEGIN
        -- The chainer fills in the chain columns once; nothing else may ever change.
        IF TG_OP = 'UPDATE' AND OLD.chain_seq IS NULL AND OLD.prev_digest IS NULL AND OLD.digest IS NULL
           AND NEW.chain_seq IS NOT NULL AND NEW.prev_digest IS NOT NULL AND NEW.digest IS NOT NULL
           AND (to_jsonb(OLD) - 'chain_seq' - 'prev_digest' - 'digest') = (to_jsonb(NEW) - 'chain_seq' - 'prev_digest' - 'digest') THEN
          RETURN NEW;
        END IF;
        -- The retention job removes a chain's prefix up to its prune point, which is a signed checkpoint's
        -- position. Two branches rather than IS NOT DISTINCT FROM, which no index serves.
        IF TG_OP = 'DELETE' AND current_setting('audit.retention_prune', true) = 'on' AND OLD.chain_seq IS NOT NULL THEN
          IF OLD.org_id IS NULL THEN
            SELECT p.pruned_seq INTO pruned FROM audit_prune_points p WHERE p.org_id IS NULL;
            covered := EXISTS (SELECT 1 FROM audit_checkpoints c WHERE c.org_id IS NULL AND c.chain_seq >= OLD.chain_seq);
          ELSE
            SELECT p.pruned_seq INTO pruned FROM audit_prune_points p WHERE p.org_id = OLD.org_id;
            covered := EXISTS (SELECT 1 FROM audit_checkpoints c WHERE c.org_id = OLD.org_id AND c.chain_seq >= OLD.chain_seq);
          END IF;
          IF pruned IS NOT NULL AND OLD.chain_seq <= pruned AND covered THEN
            RETURN OLD;
          END IF;
        END IF;
        RAISE EXCEPTION 'audit_events is append-only';
      END $$`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE OR REPLACE FUNCTION audit_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP = 'UPDATE' AND OLD.chain_seq IS NULL AND OLD.prev_digest IS NULL AND OLD.digest IS NULL
           AND NEW.chain_seq IS NOT NULL AND NEW.prev_digest IS NOT NULL AND NEW.digest IS NOT NULL
           AND (to_jsonb(OLD) - 'chain_seq' - 'prev_digest' - 'digest') = (to_jsonb(NEW) - 'chain_seq' - 'prev_digest' - 'digest') THEN
          RETURN NEW;
        END IF;
        RAISE EXCEPTION 'audit_events is append-only';
      END $$`);
    await q.query('DROP TABLE audit_prune_points');
  }
}
