import { Injectable } from '@nestjs/common';
import { EnrolmentLinks, IssuedEnrolmentLink, UserService } from '@app/accounts';
import { AuditLog } from '@app/audit';
import { SignInSessionService } from '@app/auth';
import { Actor } from '@app/common';
import { OwnedDevices } from '@app/device';

/** What a reset did: the new link (shown once) and what it revoked and ended. */
export interface FactorReset extends IssuedEnrolmentLink {
  revokedDevices: string[];
  endedSessions: number;
}

/**
 * An administrator resets a person's second factors (DECISIONS 14.4): in one transaction holding the
 * person's row lock and under the grant rules of a change of their credential (5.3), their software
 * authenticators are revoked (the device revoke of the lifecycle: their OATH credentials with them),
 * their sessions end, and a new enrolment link replaces any older one; audited `user.factors.reset`.
 * Cards are left as they are: the desk revokes a card as a card.
 */
@Injectable()
export class FactorResetService {
  constructor(
    private readonly users: UserService,
    private readonly links: EnrolmentLinks,
    private readonly devices: OwnedDevices,
    private readonly sessions: SignInSessionService,
    private readonly audit: AuditLog,
  ) {}

  reset(orgId: string, userId: string, actor: Actor): Promise<FactorReset> {
    return this.users.withCredentialLock(orgId, userId, actor, async (user, tx) => {
      const revokedDevices = await this.devices.revokeSoftwareAuthenticatorsOf(orgId, user.id, actor, tx);
      const endedSessions = (await this.sessions.endAllOfUser(orgId, user.id, 'administrator', actor, tx)).length;
      const link = await this.links.issueWithin(orgId, user, actor, tx);
      await this.audit.record(
        {
          org: orgId,
          actor: actor.name,
          action: 'user.factors.reset',
          target: user.id,
          outcome: 'success',
          sourceAddress: actor.sourceAddress,
          correlationId: actor.correlationId,
          details: { userName: user.user_name, revokedDevices, endedSessions },
        },
        tx,
      );
      return { ...link, revokedDevices, endedSessions };
    });
  }
}
