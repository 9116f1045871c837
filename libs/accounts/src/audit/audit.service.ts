import { Injectable } from '@nestjs/common';

import { Clock } from '@app/common';
import { Database, Transaction } from '@app/persistence';

export interface AuditEvent {
  org: string | null;
  /** Client ID or userName of who acted; `system` for the service itself, `cli` for the command line. */
  actor: string;
  /** dotted verb, e.g. `organization.create`, `token.issue`, `authentication.fail`. */
  action: string;
  target?: string | null;
  outcome: 'success' | 'failure';
  sourceAddress?: string | null;
  /** Non-secret context. Never put a secret, PIN, key or connection string here. */
  details?: Record<string, unknown>;
}

/** Writes the append-only audit log (DECISIONS 11); the table refuses UPDATE and DELETE. */
@Injectable()
export class AuditService {
  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
  ) {}

  async record(event: AuditEvent, tx?: Transaction): Promise<void> {
    await this.db.query(
      `INSERT INTO audit_events (occurred_at, org_id, actor, action, target, outcome, source_address, details)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
      [this.clock.now(), event.org, event.actor, event.action, event.target ?? null, event.outcome, event.sourceAddress ?? null, JSON.stringify(event.details ?? {})],
      tx,
    );
  }
}
