import { Injectable } from '@nestjs/common';
import { isoTimestamp } from '@app/common';
import { Database } from '@app/persistence';
import { PrunePoint } from './audit-chain-walk';
import { AuditFilter } from './audit-filter';

export interface AuditEventRow {
  id: string;
  occurred_at: Date;
  org_id: string | null;
  actor: string;
  action: string;
  code: number;
  target: string | null;
  outcome: 'success' | 'failure';
  source_address: string | null;
  details: Record<string, unknown>;
  correlation_id: string | null;
}

/**
 * The text `q` searches. No index serves it (the trigram index every event paid on each write was
 * dropped, migration 1764699000000, DECISIONS 17.1): it filters the events the other conditions
 * select through the organization's (org_id, occurred_at) index, one pass over them.
 */
const AUDIT_SEARCH_TEXT = `(actor || ' ' || coalesce(target, '') || ' ' || coalesce(details::text, ''))`;

/** `q` as an ILIKE pattern that finds it anywhere, its own % _ and \\ taken literally. */
const containing = (text: string) => `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

/** Reads of the append-only audit log; every write goes through AuditLog or its AUDIT_INSERT head. */
@Injectable()
export class AuditRepository {
  constructor(private readonly db: Database) {}

  /**
   * One organization's events (every organization's when `orgId` is undefined: the command line's
   * break-glass view), newest first, with the total for the SCIM ListResponse.
   */
  async query(orgId: string | undefined, filter: AuditFilter, offset: number, limit: number): Promise<{ rows: AuditEventRow[]; total: number }> {
    const conditions: string[] = [];
    const parameters: unknown[] = [];
    const add = (condition: (placeholder: string) => string, value: unknown) => {
      parameters.push(value);
      conditions.push(condition(`$${parameters.length}`));
    };
    if (orgId !== undefined) add((p) => `org_id = ${p}`, orgId);
    if (filter.from) add((p) => `occurred_at >= ${p}`, filter.from);
    if (filter.to) add((p) => `occurred_at < ${p}`, filter.to);
    if (filter.actor !== undefined) add((p) => `actor = ${p}`, filter.actor);
    if (filter.code !== undefined) add((p) => `code = ${p}`, filter.code);
    if (filter.action !== undefined) add((p) => (filter.actionPrefix ? `starts_with(action, ${p})` : `action = ${p}`), filter.action);
    if (filter.target !== undefined) add((p) => `target = ${p}`, filter.target);
    if (filter.outcome !== undefined) add((p) => `outcome = ${p}`, filter.outcome);
    if (filter.q !== undefined) add((p) => `${AUDIT_SEARCH_TEXT} ILIKE ${p}`, containing(filter.q));
    const where = conditions.length > 0 ? `WHERE ${conditions.join(' AND ')}` : '';
    const rows = await this.db.query<AuditEventRow & { total: string }>(
      `SELECT id::text AS id, occurred_at, org_id, actor, action, code, target, outcome, source_address, details, correlation_id, count(*) OVER () AS total
         FROM audit_events ${where}
        ORDER BY occurred_at DESC, id DESC OFFSET $${parameters.length + 1} LIMIT $${parameters.length + 2}`,
      [...parameters, offset, limit],
    );
    // An empty page (count=0, or past the end) has no row to carry the window count.
    if (rows.length === 0) {
      const [count] = await this.db.query<{ n: string }>(`SELECT count(*) AS n FROM audit_events ${where}`, parameters);
      return { rows: [], total: Number(count.n) };
    }
    return { rows: rows.map(({ total: _total, ...row }) => row), total: Number(rows[0].total) };
  }

  /** Whether any event names the organization (or retention removed some): a deleted organization keeps its audit events. */
  async hasEventsOf(orgId: string): Promise<boolean> {
    const [row] = await this.db.query<{ found: boolean }>(
      'SELECT EXISTS (SELECT 1 FROM audit_events WHERE org_id = $1) OR EXISTS (SELECT 1 FROM audit_prune_points WHERE org_id = $1) AS found',
      [orgId],
    );
    return row.found;
  }

  /** Where retention last cut a chain (DECISIONS 11.3); undefined when it never did. `org` null: the platform's chain. */
  async prunePoint(org: string | null): Promise<PrunePoint | undefined> {
    const [row] = await this.db.query<{ pruned_seq: string; pruned_events: string; pruned_at: Date }>(
      'SELECT pruned_seq::text AS pruned_seq, pruned_events::text AS pruned_events, pruned_at FROM audit_prune_points WHERE org_id IS NOT DISTINCT FROM $1',
      [org],
    );
    return row ? { through: Number(row.pruned_seq), events: Number(row.pruned_events), at: isoTimestamp(row.pruned_at) } : undefined;
  }
}
