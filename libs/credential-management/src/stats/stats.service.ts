import { Injectable } from '@nestjs/common';
import { UserService } from '@app/accounts';
import { OperatorDependentPolicy } from '@app/auth';
import { Principal } from '@app/common';
import { OwnedDevices } from '@app/device';

/** Content-request statuses (CREDENTIAL-MANAGEMENT.md "ContentRequest lifecycle"): counted once requests exist (Issue 14). */
const CONTENT_REQUEST_STATUSES = ['requested', 'approved', 'completed', 'failed', 'denied', 'cancelled', 'expired'] as const;
const CREDENTIAL_STATUSES = ['ISSUED', 'ON_HOLD', 'REVOKED'] as const;

/**
 * GET /Stats (CREDENTIAL-MANAGEMENT.md "Resources"): every status with its count, zeros included,
 * over what the caller reaches (an Operator Dependent caller counts its groups' users and their
 * devices, and stock devices). Credentials and content requests do not exist before Issue 14, so
 * their counts are zero, which is what there is.
 */
@Injectable()
export class StatsService {
  constructor(
    private readonly users: UserService,
    private readonly devices: OwnedDevices,
    private readonly operatorDependent: OperatorDependentPolicy,
  ) {}

  async stats(principal: Principal) {
    const groups = this.operatorDependent.groupsOf(principal);
    const [devices, users] = await Promise.all([this.devices.countByStatus(principal.org, groups), this.users.countByType(principal.org, groups)]);
    return {
      devices,
      credentials: Object.fromEntries(CREDENTIAL_STATUSES.map((status) => [status, 0])),
      users: { cardholders: users.cardholder, operators: users.operator },
      contentRequests: Object.fromEntries(CONTENT_REQUEST_STATUSES.map((status) => [status, 0])),
    };
  }
}
