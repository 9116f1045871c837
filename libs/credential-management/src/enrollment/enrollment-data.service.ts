import { Injectable } from '@nestjs/common';
import { Actor, AuditLog, byActor } from '@app/audit';
import { Clock, Principal } from '@app/common';
import { Database } from '@app/persistence';
import { ScimUserService } from '../users/scim-user.service';
import { EnrollmentDataRepository, EnrollmentDataRow } from './enrollment-data.repository';
import { parseEnrollmentData } from './enrollment-data.schema';

/** Replaces a user's enrollment data, audited with the attribute names only (values are personal data). */
@Injectable()
export class EnrollmentDataService {
  constructor(
    private readonly db: Database,
    private readonly enrollment: EnrollmentDataRepository,
    private readonly users: ScimUserService,
    private readonly audit: AuditLog,
    private readonly clock: Clock,
  ) {}

  async replace(principal: Principal, userId: string, body: unknown, actor: Actor): Promise<EnrollmentDataRow> {
    await this.users.get(principal, userId);
    const attributes = parseEnrollmentData(body);
    return this.db.transaction(async (tx) => {
      const row = await this.enrollment.replace(principal.org, userId, attributes, this.clock.now(), tx);
      await this.audit.record(
        {
          org: principal.org,
          ...byActor(actor),
          action: 'user.enrollment_data.replace',
          target: userId,
          outcome: 'success',
          details: { names: attributes.map((a) => a.name) },
        },
        tx,
      );
      return row;
    });
  }
}
