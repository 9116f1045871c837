import { Injectable } from '@nestjs/common';
import { Database, Transaction } from '@app/persistence';
import type { NotificationTemplate } from './push-notifications';

/** Where a notification stands (DECISIONS 10.1). */
export type DeliveryState = 'pending' | 'sent' | 'failed' | 'deadLettered' | 'discarded';

export interface NewNotification {
  orgId: string;
  userId: string;
  template: NotificationTemplate;
  values: Record<string, string>;
  cause: string;
  now: Date;
}

/** An outbox row as administrators read it. */
export interface OutboxRow {
  id: string;
  org_id: string;
  user_id: string;
  authenticator_id: string | null;
  template: NotificationTemplate;
  cause: string;
  state: DeliveryState;
  attempts: number;
  due_at: Date;
  gateway_id: string | null;
  last_status: number | null;
  last_error: string | null;
  created_at: Date;
  updated_at: Date;
  sent_at: Date | null;
}

/** A claimed row with what the sender needs: its authenticator's handle and operating system (null when it was removed). */
export interface ClaimedNotification {
  id: string;
  org_id: string;
  user_id: string;
  authenticator_id: string | null;
  template: NotificationTemplate;
  template_values: Record<string, string>;
  attempts: number;
  created_at: Date;
  push_handle: string | null;
  operating_system: string | null;
  stale_since: Date | null;
}

/** The end of one attempt, as the sender writes it. */
export interface AttemptOutcome {
  state: DeliveryState;
  /** The next attempt (pending only). */
  dueAt?: Date;
  gatewayId?: string | null;
  status?: number | null;
  error?: string | null;
  now: Date;
}

const COLUMNS = `id, org_id, user_id, authenticator_id, template, cause, state, attempts, due_at, gateway_id::text AS gateway_id,
  last_status, last_error, created_at, updated_at, sent_at`;

/** SQL of the push outbox (DECISIONS 10.1): written in the callers' transactions, claimed by the senders, read by administrators. */
@Injectable()
export class PushOutboxRepository {
  constructor(private readonly db: Database) {}

  /**
   * One row per live (not stale) authenticator of the person, in the caller's transaction, due at
   * once; answers how many. The authenticators are read in the same statement, so a notification
   * reaches exactly the apps registered when the change commits.
   */
  async enqueue(row: NewNotification, tx: Transaction): Promise<number> {
    const inserted = await this.db.query<{ id: string }>(
      `INSERT INTO push_outbox (id, org_id, user_id, authenticator_id, template, template_values, cause, due_at, created_at, updated_at)
       SELECT gen_random_uuid(), a.org_id, a.user_id, a.id, $3, $4, $5, $6, $6, $6
         FROM authenticators a
        WHERE a.org_id = $1 AND a.user_id = $2 AND a.stale_since IS NULL
        ORDER BY a.created_at, a.id
       RETURNING id`,
      [row.orgId, row.userId, row.template, JSON.stringify(row.values), row.cause, row.now],
      tx,
    );
    return inserted.length;
  }

  /**
   * Claims up to `limit` due rows for this sender, once across every instance (FOR UPDATE SKIP
   * LOCKED, in one short statement): each claimed row counts one more attempt and is leased until
   * `leaseUntil`, so a sender that dies before writing the outcome leaves it to be taken again when
   * the lease runs out, under the same id. The claim changes no indexed column (a heap-only update).
   */
  claim(now: Date, leaseUntil: Date, limit: number): Promise<ClaimedNotification[]> {
    return this.db.query<ClaimedNotification>(
      `WITH due AS (
         SELECT id FROM push_outbox WHERE state = 'pending' AND due_at <= $1 AND (lease_until IS NULL OR lease_until <= $1)
          ORDER BY due_at LIMIT $3 FOR UPDATE SKIP LOCKED),
       claimed AS (
         UPDATE push_outbox o SET attempts = o.attempts + 1, lease_until = $2 FROM due WHERE o.id = due.id
         RETURNING o.id, o.org_id, o.user_id, o.authenticator_id, o.template, o.template_values, o.attempts, o.created_at)
       SELECT c.*, a.push_handle, a.operating_system, a.stale_since
         FROM claimed c LEFT JOIN authenticators a ON a.id = c.authenticator_id
        ORDER BY c.created_at`,
      [now, leaseUntil, limit],
    );
  }

  /**
   * Writes the ends of attempts in one statement (the sender groups concurrent outcomes: one
   * statement per batch rather than per notification), each only while its row is still that
   * attempt's (a sender whose lease ran out and whose row was claimed again writes nothing).
   * Answers, per outcome, whether it was written.
   */
  async settleMany(outcomes: readonly { id: string; attempt: number; outcome: AttemptOutcome }[]): Promise<boolean[]> {
    const rows = outcomes.map(({ id, attempt, outcome }) => ({
      id,
      attempt,
      state: outcome.state,
      due_at: outcome.dueAt?.toISOString() ?? null,
      gateway_id: outcome.gatewayId ?? null,
      last_status: outcome.status ?? null,
      last_error: outcome.error ?? null,
      now: outcome.now.toISOString(),
    }));
    const written = await this.db.query<{ id: string }>(
      `UPDATE push_outbox o
          SET state = v.state, due_at = COALESCE(v.due_at, o.due_at), lease_until = NULL, gateway_id = COALESCE(v.gateway_id, o.gateway_id), last_status = v.last_status,
              last_error = v.last_error, updated_at = v.now, sent_at = CASE WHEN v.state = 'sent' THEN v.now ELSE o.sent_at END
         FROM jsonb_to_recordset($1::jsonb) AS v(id uuid, attempt integer, state text, due_at timestamptz, gateway_id bigint, last_status integer,
                                                 last_error text, now timestamptz)
        WHERE o.id = v.id AND o.attempts = v.attempt AND o.state = 'pending'
        RETURNING o.id`,
      [JSON.stringify(rows)],
    );
    const ids = new Set(written.map((row) => row.id));
    return outcomes.map(({ id }) => ids.has(id));
  }

  /**
   * Puts a claimed row back without counting the attempt (its gateway's circuit is open): it is
   * due again at `dueAt`.
   */
  async defer(id: string, attempt: number, dueAt: Date, now: Date): Promise<void> {
    await this.db.query(
      `UPDATE push_outbox SET attempts = attempts - 1, due_at = $3, lease_until = NULL, updated_at = $4 WHERE id = $1 AND attempts = $2 AND state = 'pending'`,
      [id, attempt, dueAt, now],
    );
  }

  /**
   * The hub called the handle gone: the row fails and the authenticator is marked stale, in one
   * statement (a stale authenticator gets no further notification; its pending ones are discarded
   * when claimed).
   */
  async settleGone(id: string, attempt: number, outcome: AttemptOutcome): Promise<boolean> {
    const rows = await this.db.query(
      `WITH settled AS (
         UPDATE push_outbox SET state = 'failed', lease_until = NULL, gateway_id = $3::bigint, last_status = $4, last_error = $5, updated_at = $6
          WHERE id = $1 AND attempts = $2 AND state = 'pending' RETURNING authenticator_id)
       UPDATE authenticators a SET stale_since = $6 FROM settled
        WHERE a.id = settled.authenticator_id AND a.stale_since IS NULL
       RETURNING a.id`,
      [id, attempt, outcome.gatewayId ?? null, outcome.status ?? null, outcome.error ?? null, outcome.now],
    );
    return rows.length > 0;
  }

  /** Deletes up to `limit` notifications settled before `before` (any organization); answers how many. */
  async purgeSettled(before: Date, limit: number): Promise<number> {
    const rows = await this.db.query(
      `DELETE FROM push_outbox WHERE id IN (SELECT id FROM push_outbox WHERE state <> 'pending' AND updated_at < $1 LIMIT $2) RETURNING id`,
      [before, limit],
    );
    return rows.length;
  }

  /** A page of the organization's notifications, newest first, optionally of one person or in one state. */
  page(orgId: string, filter: { userId?: string; state?: DeliveryState }, startIndex: number, count: number): Promise<{ rows: OutboxRow[]; total: number }> {
    const values: unknown[] = [orgId];
    let where = 'WHERE org_id = $1';
    if (filter.userId) {
      values.push(filter.userId);
      where += ` AND user_id = $${values.length}`;
    }
    if (filter.state) {
      values.push(filter.state);
      where += ` AND state = $${values.length}`;
    }
    values.push(count, startIndex - 1);
    return this.db.searchPage<OutboxRow>(
      COLUMNS,
      `FROM push_outbox ${where}`,
      { orderBy: 'created_at DESC, id', limit: `$${values.length - 1}`, offset: `$${values.length}`, count, startIndex },
      values,
    );
  }

  async find(orgId: string, id: string): Promise<OutboxRow | undefined> {
    const [row] = await this.db.query<OutboxRow>(`SELECT ${COLUMNS} FROM push_outbox WHERE org_id = $1 AND id = $2`, [orgId, id]);
    return row;
  }
}
