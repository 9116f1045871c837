import { randomBytes, randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { OrganizationService } from '@app/accounts';
import { AuditLog, byActor } from '@app/audit';
import type { OfferedTotp, TotpEnrolmentSource } from '@app/auth';
import { Actor, Clock, DataCipher, DomainError } from '@app/common';
import { DeviceContents, RequestedDevices } from '@app/device';
import { Transaction } from '@app/persistence';
import { PolicyService } from '../policies/policy.service';
import { WalletRepository } from '../wallets/wallet.repository';
import { CredentialRepository } from './credential.repository';
import { base32, base32Decode, matchingStep, otpauthUri } from './totp';

/** 160-bit OATH secrets, as SyncSession makes them (RFC 4226 recommends 160 with HMAC-SHA-1). */
const OATH_SECRET_BYTES = 20;

/**
 * A person's own OATH TOTP enrolment (libs/auth TotpEnrolment; DECISIONS 14.4): the credential is one
 * of this library's like any SyncSession issues (type OATH_TOTP, ISSUED, in the person's wallet, its
 * secret sealed under DATA_ENCRYPTION_KEYS, audited `credential.issue`), on a software-authenticator
 * device issued to them in the same transaction, so the desk suspends and revokes it as any other.
 */
@Injectable()
export class SelfEnrolledTotp implements TotpEnrolmentSource {
  constructor(
    private readonly credentials: CredentialRepository,
    private readonly wallets: WalletRepository,
    private readonly devices: RequestedDevices,
    private readonly deviceContents: DeviceContents,
    private readonly policies: PolicyService,
    private readonly organizations: OrganizationService,
    private readonly cipher: DataCipher,
    private readonly audit: AuditLog,
    private readonly clock: Clock,
  ) {}

  async offer(orgId: string, userName: string): Promise<OfferedTotp> {
    const [{ policy }, organization] = await Promise.all([this.policies.read(orgId, 'credential'), this.organizations.get(orgId)]);
    const secret = base32(randomBytes(OATH_SECRET_BYTES));
    return {
      secret,
      digits: policy.oathDigits,
      period: policy.oathPeriod,
      uri: otpauthUri('OATH_TOTP', organization.name, userName, secret, policy.oathDigits, policy.oathPeriod),
    };
  }

  check(totp: Pick<OfferedTotp, 'secret' | 'digits' | 'period'>, code: string, at: Date): number | undefined {
    const secret = base32Decode(totp.secret);
    return secret && secret.length > 0 ? matchingStep(secret, code, at, totp.period, totp.digits, null) : undefined;
  }

  async enrol(
    orgId: string,
    userId: string,
    totp: Pick<OfferedTotp, 'secret' | 'digits' | 'period'> & { step: number },
    actor: Actor,
    tx: Transaction,
  ): Promise<string> {
    const wallet = await this.wallets.findByOwner(orgId, userId, tx);
    if (!wallet) throw new DomainError('CONFLICT', 'This person has no wallet to hold a credential; ask an administrator.');
    if (wallet.status !== 'ACTIVE') throw new DomainError('CONFLICT', "This person's wallet is suspended; ask an administrator to resume it.");
    const via = 'self-enrolment';
    const deviceId = await this.devices.issueSoftwareAuthenticator(orgId, userId, actor, tx, via);
    const id = randomUUID();
    const sealed = this.cipher.seal(totp.secret, `credential:${id}`);
    await this.credentials.insert(
      [
        {
          id,
          org_id: orgId,
          type: 'OATH_TOTP',
          status: 'ISSUED',
          device_id: deviceId,
          wallet_id: wallet.id,
          content_request_id: null,
          certificate_serial: null,
          certificate: null,
          oath_key_id: sealed.keyId,
          oath_secret: sealed.sealed,
          oath_digits: totp.digits,
          oath_period: totp.period,
          oath_last_step: totp.step,
          expires_at: null,
          created_at: this.clock.now(),
        },
      ],
      tx,
    );
    this.deviceContents.changed(orgId, [deviceId], tx);
    await this.audit.record(
      {
        org: orgId,
        ...byActor(actor),
        action: 'credential.issue',
        target: id,
        outcome: 'success',
        details: { type: 'OATH_TOTP', status: 'ISSUED', device: deviceId, wallet: wallet.id, via },
      },
      tx,
    );
    return id;
  }
}
