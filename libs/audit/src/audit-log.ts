import { Injectable } from '@nestjs/common';
import { Clock, type Actor } from '@app/common';
import { Database, Transaction } from '@app/persistence';
import { AuditAction, auditCodeOf } from './audit-catalogue';

export type { Actor } from '@app/common';

export interface AuditEvent {
  org: string | null;
  /** Client ID or userName of who acted; `system` for the service itself, `cli` for the command line. */
  actor: string;
  action: AuditAction;
  target?: string | null;
  outcome: 'success' | 'failure';
  sourceAddress?: string | null;
  /** The request's correlation id (X-Correlation-ID), from the Actor. */
  correlationId?: string | null;
  /** Non-secret context. Never put a secret, PIN, OATH seed, key or connection string here. */
  details?: Record<string, unknown>;
}

/** The fields of an event that say who acted, from where, in which request. */
export function byActor(actor: Actor): Pick<AuditEvent, 'actor' | 'sourceAddress' | 'correlationId'> {
  return { actor: actor.name, sourceAddress: actor.sourceAddress, correlationId: actor.correlationId };
}

/**
 * The head of every statement that writes audit rows. AuditLog uses it; the batched hot paths (token
 * issue, authentication failures, device create) put it in their own CTE so that the change and its
 * audit rows stay one round trip, and select the columns in this order (code from `auditCodeOf`).
 */
export const AUDIT_INSERT = 'INSERT INTO audit_events (occurred_at, org_id, actor, action, code, target, outcome, source_address, details, correlation_id)';

/**
 * The one writer of the append-only audit log (DECISIONS 11; the table refuses UPDATE and DELETE).
 * Pass the transaction of the change the event records, so that both commit or neither does.
 */
@Injectable()
export class AuditLog {
  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
  ) {}

  /** The rows each open transaction has recorded, written in one statement just before it commits. */
  private readonly pending = new WeakMap<Transaction, string[]>();

  async record(event: AuditEvent, tx?: Transaction): Promise<void> {
    await this.recordMany([event], tx);
  }

  /**
   * Without a transaction the rows are written at once. In one, they are written together just
   * before its COMMIT (one statement for every event of a sync session, instead of one each); each
   * row is serialized when it is recorded, so a later change to its details object changes nothing.
   */
  async recordMany(events: readonly AuditEvent[], tx?: Transaction): Promise<void> {
    if (events.length === 0) return;
    const rows = events.map((event) => JSON.stringify(row(event)));
    if (!tx) return this.insert(rows);
    let queued = this.pending.get(tx);
    if (!queued) {
      const created: string[] = [];
      this.pending.set(tx, created);
      tx.beforeCommit(() => this.insert(created.splice(0), tx));
      queued = created;
    }
    queued.push(...rows);
  }

  private async insert(rows: string[], tx?: Transaction): Promise<void> {
    if (rows.length === 0) return;
    await this.db.query(
      `${AUDIT_INSERT}
       SELECT $1, e.org_id, e.actor, e.action, e.code, e.target, e.outcome, e.source_address, e.details, e.correlation_id
         FROM jsonb_to_recordset($2::jsonb)
           AS e(org_id text, actor text, action text, code int, target text, outcome text, source_address text, details jsonb, correlation_id text)`,
      [this.clock.now(), `[${rows.join(',')}]`],
      tx,
    );
  }
}

function row(event: AuditEvent) {
  return {
    org_id: event.org,
    actor: event.actor,
    action: event.action,
    code: auditCodeOf(event.action),
    target: event.target ?? null,
    outcome: event.outcome,
    source_address: event.sourceAddress ?? null,
    details: event.details ?? {},
    correlation_id: event.correlationId ?? null,
  };
}
