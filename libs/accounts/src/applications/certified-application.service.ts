import { Injectable } from '@nestjs/common';
import { Clock, isoTimestamp, notFound, uniqueness } from '@app/common';
import { Database, PG_FOREIGN_KEY_VIOLATION, PG_UNIQUE_VIOLATION, isPgError } from '@app/persistence';
import { Actor, AuditLog } from '@app/audit';

export interface CertifiedApplication {
  applicationId: string;
  name: string | null;
  created: string;
}

interface ApplicationRow {
  application_id: string;
  name: string | null;
  created_at: Date;
}

/**
 * The Application-IDs an organization has certified (DECISIONS 6): under the `certified` policy,
 * only these may call the API.
 */
@Injectable()
export class CertifiedApplicationService {
  constructor(
    private readonly db: Database,
    private readonly audit: AuditLog,
    private readonly clock: Clock,
  ) {}

  async isCertified(orgId: string, applicationId: string): Promise<boolean> {
    const rows = await this.db.query('SELECT 1 FROM certified_applications WHERE org_id = $1 AND application_id = $2', [orgId, applicationId]);
    return rows.length > 0;
  }

  async add(orgId: string, applicationId: string, name: string | undefined, actor: Actor): Promise<CertifiedApplication> {
    try {
      return await this.db.transaction(async (tx) => {
        const [row] = await this.db.query<ApplicationRow>(
          'INSERT INTO certified_applications (org_id, application_id, name, created_at) VALUES ($1, $2, $3, $4) RETURNING application_id, name, created_at',
          [orgId, applicationId, name ?? null, this.clock.now()],
          tx,
        );
        await this.audit.record(
          {
            org: orgId,
            actor: actor.name,
            action: 'application.certify',
            target: applicationId,
            outcome: 'success',
            sourceAddress: actor.sourceAddress,
            correlationId: actor.correlationId,
          },
          tx,
        );
        return present(row);
      });
    } catch (error) {
      if (isPgError(error, PG_UNIQUE_VIOLATION)) throw uniqueness(`Application-ID "${applicationId}" is already certified for organization "${orgId}".`);
      if (isPgError(error, PG_FOREIGN_KEY_VIOLATION)) throw notFound(`Organization "${orgId}" does not exist.`);
      throw error;
    }
  }

  /** A page of the organization's certified Application-IDs, in Application-ID order, with the total. */
  async list(orgId: string, offset: number, limit: number): Promise<{ rows: CertifiedApplication[]; total: number }> {
    const rows = await this.db.query<ApplicationRow & { total: string }>(
      'SELECT application_id, name, created_at, count(*) OVER () AS total FROM certified_applications WHERE org_id = $1 ORDER BY application_id OFFSET $2 LIMIT $3',
      [orgId, offset, limit],
    );
    if (rows.length === 0) {
      const [count] = await this.db.query<{ n: string }>('SELECT count(*) AS n FROM certified_applications WHERE org_id = $1', [orgId]);
      return { rows: [], total: Number(count.n) };
    }
    return { rows: rows.map(present), total: Number(rows[0].total) };
  }

  async remove(orgId: string, applicationId: string, actor: Actor): Promise<void> {
    await this.db.transaction(async (tx) => {
      const rows = await this.db.query('DELETE FROM certified_applications WHERE org_id = $1 AND application_id = $2 RETURNING 1', [orgId, applicationId], tx);
      if (rows.length === 0) throw notFound(`Application-ID "${applicationId.slice(0, 128)}" is not certified for organization "${orgId}".`);
      await this.audit.record(
        {
          org: orgId,
          actor: actor.name,
          action: 'application.uncertify',
          target: applicationId,
          outcome: 'success',
          sourceAddress: actor.sourceAddress,
          correlationId: actor.correlationId,
        },
        tx,
      );
    });
  }
}

function present(row: ApplicationRow): CertifiedApplication {
  return { applicationId: row.application_id, name: row.name, created: isoTimestamp(row.created_at) };
}
