import { Injectable } from '@nestjs/common';
import { Clock, isoTimestamp, notFound, uniqueness } from '@app/common';
import { Database, PG_UNIQUE_VIOLATION, isPgError } from '@app/persistence';
import { AuditService } from '../audit/audit.service';
import { Actor } from '../system-accounts/system-account.service';

export interface CertifiedApplication {
  applicationId: string;
  name: string | null;
  created: string;
}

/**
 * The Application-IDs an organization has certified (DECISIONS 6): under the `certified` policy,
 * only these may call the API.
 */
@Injectable()
export class CertifiedApplicationService {
  constructor(
    private readonly db: Database,
    private readonly audit: AuditService,
    private readonly clock: Clock,
  ) {}

  async isCertified(orgId: string, applicationId: string): Promise<boolean> {
    const rows = await this.db.query('SELECT 1 FROM certified_applications WHERE org_id = $1 AND application_id = $2', [orgId, applicationId]);
    return rows.length > 0;
  }

  async add(orgId: string, applicationId: string, name: string | undefined, actor: Actor): Promise<CertifiedApplication> {
    try {
      const [row] = await this.db.query<{ application_id: string; name: string | null; created_at: Date }>(
        'INSERT INTO certified_applications (org_id, application_id, name, created_at) VALUES ($1, $2, $3, $4) RETURNING application_id, name, created_at',
        [orgId, applicationId, name ?? null, this.clock.now()],
      );
      await this.audit.record({ org: orgId, actor: actor.name, action: 'application.certify', target: applicationId, outcome: 'success', sourceAddress: actor.sourceAddress });
      return present(row);
    } catch (error) {
      if (isPgError(error, PG_UNIQUE_VIOLATION)) throw uniqueness(`Application-ID "${applicationId}" is already certified for organization "${orgId}".`);
      throw error;
    }
  }

  async list(orgId: string): Promise<CertifiedApplication[]> {
    const rows = await this.db.query<{ application_id: string; name: string | null; created_at: Date }>(
      'SELECT application_id, name, created_at FROM certified_applications WHERE org_id = $1 ORDER BY application_id',
      [orgId],
    );
    return rows.map(present);
  }

  async remove(orgId: string, applicationId: string, actor: Actor): Promise<void> {
    const rows = await this.db.query('DELETE FROM certified_applications WHERE org_id = $1 AND application_id = $2 RETURNING 1', [orgId, applicationId]);
    if (rows.length === 0) throw notFound(`Application-ID "${applicationId}" is not certified for organization "${orgId}".`);
    await this.audit.record({ org: orgId, actor: actor.name, action: 'application.uncertify', target: applicationId, outcome: 'success', sourceAddress: actor.sourceAddress });
  }
}

function present(row: { application_id: string; name: string | null; created_at: Date }): CertifiedApplication {
  return { applicationId: row.application_id, name: row.name, created: isoTimestamp(row.created_at) };
}
