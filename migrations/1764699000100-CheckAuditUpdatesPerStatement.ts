import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The append-only rule for UPDATE checked once per statement instead of once per row (issue 35,
 * DECISIONS 11.2). The row-level BEFORE UPDATE trigger ran a plpgsql function and two to_jsonb per
 * event the chainer links (52.9 us per row against 14.8 without it, in a bulk UPDATE); the statement
 * trigger `audit_events_chain_only` (AFTER UPDATE ... FOR EACH STATEMENT, with the statement's old and
 * new rows as transition tables) checks the whole statement in one set-based query and refuses it
 * unless every row it changed is the chainer's: the three chain columns empty before and all set
 * after, every other column unchanged. "Every other column" is read from pg_attribute when the
 * statement runs, so a column added later is covered without touching this trigger. DELETE keeps
 * its row trigger `audit_events_no_change` (retention, 11.3, is rare), now BEFORE DELETE only.
 */
export class CheckAuditUpdatesPerStatement1764699000100 implements MigrationInterface {
  name = 'CheckAuditUpdatesPerStatement1764699000100';

  async up(q: QueryRunner): Promise<void> {
    // The column list is read from the catalog at each statement (one small query and one plan per
    // statement, not per row): to_jsonb of both rows, which needs no list, cost ~30 us per row.
    await q.query(`
      CREATE FUNCTION audit_events_update_check() RETURNS trigger LANGUAGE plpgsql AS $$
      DECLARE
        old_columns text;
        new_columns text;
        refused boolean;
      BEGIN
        SELECT string_agg(format('o.%I', attname), ', ' ORDER BY attnum), string_agg(format('n.%I', attname), ', ' ORDER BY attnum)
          INTO old_columns, new_columns
          FROM pg_attribute
         WHERE attrelid = TG_RELID AND attnum > 0 AND NOT attisdropped AND attname NOT IN ('chain_seq', 'prev_digest', 'digest');
        -- Every row the statement changed (ids matched one to one) must be the chainer's fill-in.
        EXECUTE format(
          'SELECT EXISTS (SELECT 1 FROM audit_update_old o FULL JOIN audit_update_new n ON n.id = o.id
            WHERE o.id IS NULL OR n.id IS NULL
               OR o.chain_seq IS NOT NULL OR o.prev_digest IS NOT NULL OR o.digest IS NOT NULL
               OR n.chain_seq IS NULL OR n.prev_digest IS NULL OR n.digest IS NULL
               OR (%s) IS DISTINCT FROM (%s))',
          old_columns, new_columns) INTO refused;
        IF refused THEN
          RAISE EXCEPTION 'audit_events is append-only';
        END IF;
        RETURN NULL;
      END $$`);
    await q.query(`
      CREATE TRIGGER audit_events_chain_only AFTER UPDATE ON audit_events
      REFERENCING OLD TABLE AS audit_update_old NEW TABLE AS audit_update_new
      FOR EACH STATEMENT EXECUTE FUNCTION audit_events_update_check()`);
    await q.query('DROP TRIGGER audit_events_no_change ON audit_events');
    await q.query(`
      CREATE OR REPLACE FUNCTION audit_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
      DECLARE
        pruned bigint;
        covered boolean;
      BEGIN
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
    await q.query(`
      CREATE TRIGGER audit_events_no_change BEFORE DELETE ON audit_events
      FOR EACH ROW EXECUTE FUNCTION audit_events_append_only()`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP TRIGGER audit_events_no_change ON audit_events');
    // The function as migration 1764693000000 left it: the chainer's UPDATE checked row by row.
    await q.query(`
      CREATE OR REPLACE FUNCTION audit_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
      DECLARE
        pruned bigint;
        covered boolean;
      BEGIN
        IF TG_OP = 'UPDATE' AND OLD.chain_seq IS NULL AND OLD.prev_digest IS NULL AND OLD.digest IS NULL
           AND NEW.chain_seq IS NOT NULL AND NEW.prev_digest IS NOT NULL AND NEW.digest IS NOT NULL
           AND (to_jsonb(OLD) - 'chain_seq' - 'prev_digest' - 'digest') = (to_jsonb(NEW) - 'chain_seq' - 'prev_digest' - 'digest') THEN
          RETURN NEW;
        END IF;
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
    await q.query(`
      CREATE TRIGGER audit_events_no_change BEFORE UPDATE OR DELETE ON audit_events
      FOR EACH ROW EXECUTE FUNCTION audit_events_append_only()`);
    await q.query('DROP TRIGGER audit_events_chain_only ON audit_events');
    await q.query('DROP FUNCTION audit_events_update_check');
  }
}
