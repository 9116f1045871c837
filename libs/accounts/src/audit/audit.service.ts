import { Injectable } from '@nestjs/common';

import { Clock } from '@app/common';
import { Database, Transaction } from '@app/persistence';
import { AuditFilter } from './audit-filter';
import { AuditEventRow, AuditRepository } from './audit.repository';

/** Who changes something, for the audit log: a Client ID or userName, `system` (bootstrap) or `cli` (command line). */
export interface Actor {
  name: string;
  sourceAddress?: string;
}

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

/** Writes and reads the append-only audit log (DECISIONS 11); the table refuses UPDATE and DELETE. */
@Injectable()
export class AuditService {
  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    private readonly events: AuditRepository,
  ) {}

  /** True for an organization that exists or existed (its audit events outlive it). */
  isKnownOrganization(orgId: string): Promise<boolean> {
    return this.events.isKnownOrganization(orgId);
  }

  /** Newest first; `orgId` undefined reads every organization's events (command line only). */
  query(orgId: string | undefined, filter: AuditFilter, offset: number, limit: number): Promise<{ rows: AuditEventRow[]; total: number }> {
    return this.events.query(orgId, filter, offset, limit);
  }

  async record(event: AuditEvent, tx?: Transaction): Promise<void> {
    await this.db.query(
      `INSERT INTO audit_events (occurred_at, org_id, actor, action, target, outcome, source_address, details)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
      [
        this.clock.now(),
        event.org,
        event.actor,
        event.action,
        event.target ?? null,
        event.outcome,
        event.sourceAddress ?? null,
        JSON.stringify(event.details ?? {}),
      ],
      tx,
    );
  }
}
