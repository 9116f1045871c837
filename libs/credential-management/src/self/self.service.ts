import { Injectable } from '@nestjs/common';
import { Actor, Principal, ScimSearch, forbidden, invalidValue } from '@app/common';
import { DeviceService, DeviceView, parseActionBody } from '@app/device';
import { ContentRequestRepository, ContentRequestRow } from '../content-requests/content-request.repository';
import { ContentRequestService } from '../content-requests/content-request.service';
import { PolicyService } from '../policies/policy.service';
import { SyncOutcome, SyncSessionService } from '../sync-sessions/sync-session.service';
import { LinkedUser, ScimUserService } from '../users/scim-user.service';
import { WalletService, WalletView } from '../wallets/wallet.service';

const SELF_SUSPEND_REASONS = ['LOST', 'STOLEN', 'DAMAGED', 'FORGOTTEN'];

/** The caller's own objects (CREDENTIAL-MANAGEMENT.md "Self"). */
@Injectable()
export class SelfService {
  constructor(
    private readonly scimUsers: ScimUserService,
    private readonly devices: DeviceService,
    private readonly wallets: WalletService,
    private readonly policies: PolicyService,
    private readonly requests: ContentRequestService,
    private readonly sessions: SyncSessionService,
  ) {}

  /** A sync session for one of the caller's own requests (DECISIONS 5.2: the Device scope executes its own). */
  syncSession(principal: Principal, body: unknown, actor: Actor): Promise<SyncOutcome> {
    return this.sessions.execute(principal, body, actor, { ownerId: userIdOf(principal) });
  }

  /** A content request on one of the caller's own devices: `unlock pin` or `recycle` (CREDENTIAL-MANAGEMENT.md "Self"). */
  createRequest(principal: Principal, body: unknown, actor: Actor): Promise<ContentRequestRow> {
    return this.requests.create(principal, body, actor, { ownerId: userIdOf(principal) });
  }

  searchRequests(principal: Principal, search: ScimSearch): ReturnType<ContentRequestRepository['search']> {
    return this.requests.search(principal, search, { ownerId: userIdOf(principal) });
  }

  cancelRequest(principal: Principal, id: string, body: unknown, actor: Actor): Promise<ContentRequestRow> {
    return this.requests.act(principal, id, 'cancel', body, actor, { ownerId: userIdOf(principal) });
  }

  user(principal: Principal): Promise<LinkedUser> {
    return this.scimUsers.read(principal, userIdOf(principal));
  }

  ownDevices(principal: Principal): Promise<DeviceView[]> {
    return this.devices.ownedBy(principal.org, userIdOf(principal));
  }

  wallet(principal: Principal): Promise<WalletView> {
    return this.wallets.ofOwner(principal.org, userIdOf(principal));
  }

  /**
   * Suspend (a reason is required: the cardholder says why) or resume one of the caller's own
   * devices; resume only while the organization's WalletPolicy allows self-service.
   */
  async move(principal: Principal, id: string, action: 'suspend' | 'resume', body: unknown, actor: Actor): Promise<DeviceView> {
    const owner = userIdOf(principal);
    const reason = parseActionBody(body);
    if (action === 'suspend' && (reason === undefined || !SELF_SUSPEND_REASONS.includes(reason))) {
      throw invalidValue(`Invalid reason: say why the device is suspended, one of ${SELF_SUSPEND_REASONS.join(', ')}.`);
    }
    if (action === 'resume') {
      const { policy } = await this.policies.read(principal.org, 'wallet');
      if (!policy.allowSelfService) {
        throw forbidden("Your organization's wallet policy does not let cardholders resume their own devices (allowSelfService is false); ask your help desk.");
      }
    }
    return (await this.devices.act(principal, id, action, reason, actor, { ownedBy: owner }))!;
  }
}

/** Only a user's token has a self; a system account's is refused with what to use instead. */
function userIdOf(principal: Principal): string {
  if (principal.kind !== 'user') {
    throw forbidden(`/Self is the signed-in user's; "${principal.name}" is a system account. Use a user's token (password or jwt-bearer grant).`);
  }
  return principal.subjectId;
}
