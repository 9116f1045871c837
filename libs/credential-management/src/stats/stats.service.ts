import { Injectable } from '@nestjs/common';
import { UserService } from '@app/accounts';
import { OperatorDependentPolicy } from '@app/auth';
import { Principal } from '@app/common';
import { OwnedDevices } from '@app/device';
import { CONTENT_REQUEST_STATUSES } from '../content-requests/content-request-lifecycle';
import { ContentRequestRepository } from '../content-requests/content-request.repository';
import { CredentialRepository } from '../credentials/credential.repository';
import { CREDENTIAL_STATUSES } from '../credentials/credential.schema';

/**
 * GET /Stats (CREDENTIAL-MANAGEMENT.md "Resources"): every status with its count, zeros included,
 * over what the caller reaches (an Operator Dependent caller counts its groups' users and their
 * devices, and stock devices, and the content requests and credentials of their wallets).
 */
@Injectable()
export class StatsService {
  constructor(
    private readonly users: UserService,
    private readonly devices: OwnedDevices,
    private readonly operatorDependent: OperatorDependentPolicy,
    private readonly requests: ContentRequestRepository,
    private readonly credentials: CredentialRepository,
  ) {}

  async stats(principal: Principal) {
    const groups = this.operatorDependent.groupsOf(principal);
    const [devices, users, requests, credentials] = await Promise.all([
      this.devices.countByStatus(principal.org, groups),
      this.users.countByType(principal.org, groups),
      this.requests.countByStatus(principal.org, groups),
      this.credentials.countByStatus(principal.org, groups),
    ]);
    return {
      devices,
      credentials: Object.fromEntries(CREDENTIAL_STATUSES.map((status) => [status, credentials.get(status) ?? 0])),
      users: { cardholders: users.cardholder, operators: users.operator },
      contentRequests: Object.fromEntries(CONTENT_REQUEST_STATUSES.map((status) => [status, requests.get(status) ?? 0])),
    };
  }
}
