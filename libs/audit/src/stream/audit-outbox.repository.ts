import { Injectable } from '@nestjs/common';
import { Database, Transaction } from '@app/persistence';
import type { StreamedEventRow } from './audit-stream-format';

/** Where one event stands at one destination (DECISIONS 11.4). */
export type StreamDeliveryState = 'pending' | 'delivered' | 'deadLettered';

export interface DeliveryRow {
  destination_id: string;
  event_id: string;
  state: StreamDeliveryState;
  attempts: number;
  due_at: Date;
  last_error: string | null;
  created_at: Date;
  updated_at: Date;
  delivered_at: Date | null;
  action: string | null;
  code: number | null;
}

/** A claimed row with the event it carries. */
export interface ClaimedDelivery extends StreamedEventRow {
  destination_id: string;
  attempts: number;
  created_at: Date;
}

export interface DeliveryOutcome {
  destinationId: string;
  eventId: string;
  attempt: number;
  state: StreamDeliveryState;
  dueAt?: Date;
  error: string | null;
  now: Date;
}

/**
 * SQL of the audit stream's outbox (DECISIONS 11.4). Rows are written by the trigger on audit_events
 * (migration CreateAuditStream), in the events' own statement; this class claims, settles, reads and
 * redrives them.
 */
@Injectable()
export class AuditOutboxRepository {
  constructor(private readonly db: Database) {}

  /**
   * Claims up to `limit` due rows across every instance (FOR UPDATE SKIP LOCKED in one short
   * statement): each counts one more attempt and is leased until `leaseUntil`, so a sender that dies
   * leaves it to be taken again after the lease, under the same event id. The event is read in the
   * same statement, with its chain digest when the chainer has linked it.
   */
  claim(now: Date, leaseUntil: Date, limit: number): Promise<ClaimedDelivery[]> {
    return this.db.query<ClaimedDelivery>(
      `WITH due AS (
         SELECT destination_id, event_id FROM audit_outbox
          WHERE state = 'pending' AND due_at <= $1 AND (lease_until IS NULL OR lease_until <= $1)
          ORDER BY due_at LIMIT $3 FOR UPDATE SKIP LOCKED),
       claimed AS (
         UPDATE audit_outbox o SET attempts = o.attempts + 1, lease_until = $2
           FROM due WHERE o.destination_id = due.destination_id AND o.event_id = due.event_id
         RETURNING o.destination_id, o.event_id, o.attempts, o.created_at)
       SELECT c.destination_id::text AS destination_id, c.event_id::text AS event_id, c.attempts, c.created_at,
              e.occurred_at, e.org_id, e.actor, e.action, e.code, e.target, e.outcome, e.source_address, e.details, e.correlation_id,
              e.chain_seq::text AS chain_seq, e.digest
         FROM claimed c JOIN audit_events e ON e.id = c.event_id
        ORDER BY c.event_id`,
      [now, leaseUntil, limit],
    );
  }

  /** Writes the ends of attempts in one statement, each only while its row is still that attempt's. */
  async settleMany(outcomes: readonly DeliveryOutcome[]): Promise<void> {
    if (outcomes.length === 0) return;
    const rows = outcomes.map((o) => ({
      destination_id: o.destinationId,
      event_id: o.eventId,
      attempt: o.attempt,
      state: o.state,
      due_at: o.dueAt?.toISOString() ?? null,
      last_error: o.error,
      now: o.now.toISOString(),
    }));
    await this.db.query(
      `UPDATE audit_outbox o
          SET state = v.state, due_at = COALESCE(v.due_at, o.due_at), lease_until = NULL, last_error = v.last_error, updated_at = v.now,
              delivered_at = CASE WHEN v.state = 'delivered' THEN v.now ELSE o.delivered_at END
         FROM jsonb_to_recordset($1::jsonb) AS v(destination_id bigint, event_id bigint, attempt integer, state text, due_at timestamptz, last_error text, now timestamptz)
        WHERE o.destination_id = v.destination_id AND o.event_id = v.event_id AND o.attempts = v.attempt AND o.state = 'pending'`,
      [JSON.stringify(rows)],
    );
  }

  /** Puts claimed rows back without counting the attempt (shutdown): due at `dueAt`. */
  async putBack(rows: readonly { destinationId: string; eventId: string; attempt: number }[], dueAt: Date): Promise<void> {
    if (rows.length === 0) return;
    await this.db.query(
      `UPDATE audit_outbox o SET attempts = o.attempts - 1, due_at = $2, lease_until = NULL
         FROM jsonb_to_recordset($1::jsonb) AS v(destination_id bigint, event_id bigint, attempt integer)
        WHERE o.destination_id = v.destination_id AND o.event_id = v.event_id AND o.attempts = v.attempt AND o.state = 'pending'`,
      [JSON.stringify(rows.map((r) => ({ destination_id: r.destinationId, event_id: r.eventId, attempt: r.attempt }))), dueAt],
    );
  }

  /** A page of one destination's deliveries, newest event first, optionally in one state. */
  page(destinationId: string, state: StreamDeliveryState | undefined, startIndex: number, count: number): Promise<{ rows: DeliveryRow[]; total: number }> {
    const values: unknown[] = [destinationId];
    let where = 'WHERE o.destination_id = $1';
    if (state) {
      values.push(state);
      where += ` AND o.state = $${values.length}`;
    }
    values.push(count, startIndex - 1);
    return this.db.searchPage<DeliveryRow>(
      `o.destination_id::text AS destination_id, o.event_id::text AS event_id, o.state, o.attempts, o.due_at, o.last_error, o.created_at, o.updated_at,
       o.delivered_at, e.action, e.code`,
      `FROM audit_outbox o LEFT JOIN audit_events e ON e.id = o.event_id ${where}`,
      { orderBy: 'o.event_id DESC', limit: `$${values.length - 1}`, offset: `$${values.length}`, count, startIndex },
      values,
    );
  }

  /** A dead letter back in the queue, due at once, its attempts counted afresh; answers whether one was there. */
  async redrive(destinationId: string, eventId: string, now: Date, tx: Transaction): Promise<boolean> {
    const rows = await this.db.query(
      `UPDATE audit_outbox SET state = 'pending', attempts = 0, due_at = $3, lease_until = NULL, updated_at = $3
        WHERE destination_id = $1 AND event_id = $2 AND state = 'deadLettered' RETURNING event_id`,
      [destinationId, eventId, now],
      tx,
    );
    return rows.length > 0;
  }

  async stateOf(destinationId: string, eventId: string, tx?: Transaction): Promise<StreamDeliveryState | undefined> {
    const [row] = await this.db.query<{ state: StreamDeliveryState }>(
      'SELECT state FROM audit_outbox WHERE destination_id = $1 AND event_id = $2',
      [destinationId, eventId],
      tx,
    );
    return row?.state;
  }

  /** Deletes up to `limit` deliveries settled before `before`; answers how many. */
  async purgeDelivered(before: Date, limit: number): Promise<number> {
    const rows = await this.db.query(
      `DELETE FROM audit_outbox WHERE (destination_id, event_id) IN (
         SELECT destination_id, event_id FROM audit_outbox WHERE state = 'delivered' AND updated_at < $1 LIMIT $2) RETURNING event_id`,
      [before, limit],
    );
    return rows.length;
  }
}
