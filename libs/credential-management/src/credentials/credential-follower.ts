import { Injectable } from '@nestjs/common';
import { AuditLog, byActor } from '@app/audit';
import { SignInSessionService } from '@app/auth';
import { Clock } from '@app/common';
import { DeviceMove, DeviceMoveListeners } from '@app/device';
import { Transaction } from '@app/persistence';
import { Actor } from '@app/audit';
import { CertificateAuthority, CertificateRevocation, CertificateRevocationListeners, RevocationReason } from '@app/pki';
import { CredentialNotifications } from '../notifications/credential-notifications';
import { PolicyService } from '../policies/policy.service';
import { CredentialRepository, CredentialRow } from './credential.repository';
import { CredentialStatus } from './credential.schema';

/** What each device move does to the device's credentials and their certificates (DECISIONS 8; CREDENTIAL-MANAGEMENT.md "PKI"). */
const FOLLOW = {
  suspend: { from: ['ISSUED'], to: 'ON_HOLD', certificate: 'on-hold', audit: 'credential.suspend' },
  resume: { from: ['ON_HOLD'], to: 'ISSUED', certificate: 'good', audit: 'credential.resume' },
  activate: { from: ['ON_HOLD'], to: 'ISSUED', certificate: 'good', audit: 'credential.resume' },
  revoke: { from: ['ISSUED', 'ON_HOLD'], to: 'REVOKED', certificate: 'revoked', audit: 'credential.revoke' },
  terminate: { from: ['ISSUED', 'ON_HOLD'], to: 'REVOKED', certificate: 'revoked', audit: 'credential.revoke' },
} as const satisfies Record<DeviceMove['action'], { from: readonly CredentialStatus[]; to: CredentialStatus; certificate: string; audit: string }>;

/**
 * The revocation reason of a device move (CREDENTIAL-MANAGEMENT.md "Open points"): the action's
 * reason maps first (LOST, STOLEN: keyCompromise; DAMAGED, RENEW: superseded); otherwise terminate
 * (and a user's deletion, which terminates) gives cessationOfOperation, and revoke unspecified.
 */
export function revocationReason(move: Pick<DeviceMove, 'action' | 'reason'>): RevocationReason {
  if (move.reason === 'LOST' || move.reason === 'STOLEN') return 'keyCompromise';
  if (move.reason === 'DAMAGED' || move.reason === 'RENEW') return 'superseded';
  return move.action === 'terminate' ? 'cessationOfOperation' : 'unspecified';
}

/**
 * Keeps a device's credentials with their device: registered with libs/device's move listeners, so
 * every move (the Device entry points, a wallet's suspend and resume, a user's forced deletion)
 * carries its credentials and their certificates (hold, release, revoke; the CRL re-signed) in the
 * same transaction. CredentialPolicy.revokeOnTerminate false leaves a terminated device's credentials
 * as they are. And keeps credentials with their certificates when the CA revokes them itself (a
 * generation revoked as compromised, libs/pki CertificateRevocationListeners): the same revocation
 * of the credentials, its audit, the owners' notification and the end of the smart-card sessions.
 */
@Injectable()
export class CredentialFollower {
  constructor(
    private readonly credentials: CredentialRepository,
    private readonly ca: CertificateAuthority,
    private readonly policies: PolicyService,
    private readonly audit: AuditLog,
    private readonly clock: Clock,
    private readonly signInSessions: SignInSessionService,
    private readonly notifications: CredentialNotifications,
    listeners: DeviceMoveListeners,
    certificateRevocations: CertificateRevocationListeners,
  ) {
    listeners.register((move, tx) => this.follow(move, tx));
    certificateRevocations.register({
      lock: async (orgId, serials, tx) => void (await this.credentials.lockOfCertificates(orgId, serials, FOLLOW.revoke.from, tx)),
      revoked: (revocation, tx) => this.followCertificates(revocation, tx),
    });
  }

  private async follow(move: DeviceMove, tx: Transaction): Promise<void> {
    const rule = FOLLOW[move.action];
    const following = await this.credentials.lockOfDevice(move.orgId, move.deviceId, rule.from, tx);
    if (following.length === 0) return;
    if (move.action === 'terminate' && !(await this.policies.read(move.orgId, 'credential', tx)).policy.revokeOnTerminate) return;
    const reason = rule.to === 'REVOKED' ? revocationReason(move) : null;
    await this.move(move.orgId, following, rule, reason, { device: move.deviceId, via: `device.${move.action}` }, move.actor, tx);
    const serials = following.map((c) => c.certificate_serial).filter((serial): serial is string => serial !== null);
    const changed = await this.ca.changeWithin(move.orgId, serials, rule.certificate, reason, move.actor, tx);
    // A smart-card certificate revoked or put on hold ends the sessions it opened, with this commit (DECISIONS 14.2).
    if (rule.certificate !== 'good') await this.signInSessions.endAllOfCertificates(move.orgId, changed, move.actor, tx);
  }

  /** The CA revoked these certificates itself (already on its CRL): their live credentials are revoked as a device's revocation revokes them. */
  private async followCertificates(revocation: CertificateRevocation, tx: Transaction): Promise<void> {
    const following = await this.credentials.lockOfCertificates(revocation.orgId, revocation.serials, FOLLOW.revoke.from, tx);
    await this.move(revocation.orgId, following, FOLLOW.revoke, revocation.reason, { via: revocation.via }, revocation.actor, tx);
    await this.signInSessions.endAllOfCertificates(revocation.orgId, revocation.serials, revocation.actor, tx);
  }

  /** The credentials' new status in one statement, an audit event each, and their owners told of a suspension or revocation. */
  private async move(
    orgId: string,
    following: readonly CredentialRow[],
    rule: (typeof FOLLOW)[keyof typeof FOLLOW],
    reason: string | null,
    context: { device?: string; via: string },
    actor: Actor,
    tx: Transaction,
  ): Promise<void> {
    if (following.length === 0) return;
    await this.credentials.setStatus(
      orgId,
      following.map((c) => c.id),
      { status: rule.to, reason, now: this.clock.now() },
      tx,
    );
    for (const credential of following) {
      await this.audit.record(
        {
          org: orgId,
          ...byActor(actor),
          action: rule.audit,
          target: credential.id,
          outcome: 'success',
          details: { from: credential.status, to: rule.to, ...context, ...(reason ? { reason } : {}) },
        },
        tx,
      );
    }
    // The owners' authenticators hear of a suspension or revocation (DECISIONS 10.6); a resumption is not announced.
    if (rule.to === 'ON_HOLD' || rule.to === 'REVOKED')
      await this.notifications.credentials(orgId, following, rule.to === 'ON_HOLD' ? 'suspended' : 'revoked', tx);
  }
}
