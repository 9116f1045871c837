import { randomBytes, randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { OrganizationService, UserService } from '@app/accounts';
import { Actor, AuditLog, byActor } from '@app/audit';
import { OperatorDependentPolicy, SignInSessionService } from '@app/auth';
import { Clock, DataCipher, DomainError, Principal, invalidValue, parseBody } from '@app/common';
import { CompletionMove, DeviceContents, DeviceStatus, RequestedDevices, TargetDevice } from '@app/device';
import { Database, PG_UNIQUE_VIOLATION, Transaction, isPgError } from '@app/persistence';
import { CertificateAuthority, RevocationReason } from '@app/pki';
import { ContentRequestRepository, ContentRequestRow } from '../content-requests/content-request.repository';
import { ContentRequestType, TARGET_STATUSES, requestTransitionOf } from '../content-requests/content-request-lifecycle';
import { RequestScope } from '../content-requests/content-request.service';
import { CardAdminKeys, adminKeyCuid, isSmartCardEncoding } from '../content-requests/card-admin-keys';
import { CredentialRepository, CredentialRow, NewCredential } from '../credentials/credential.repository';
import { CredentialNotifications } from '../notifications/credential-notifications';
import { CredentialStatus } from '../credentials/credential.schema';
import { DevicePolicyRepository, DevicePolicyRow } from '../device-policies/device-policy.repository';
import { CredentialType } from '../device-policies/device-policy.schema';
import { EnrollmentDataRepository } from '../enrollment/enrollment-data.repository';
import { PolicyService } from '../policies/policy.service';
import { CredentialPolicy } from '../policies/policy.schema';
import { SyncSessionRepository } from './sync-session.repository';
import { SyncResult, syncSessionSchema } from './sync-session.schema';
import { base32, otpauthUri } from '../credentials/totp';

/** What a sync session answers (CREDENTIAL-MANAGEMENT.md "SyncSession"); OATH secrets and card admin keys appear here once, and nowhere else. */
export interface SyncOutcome {
  id: string;
  request: { id: string; status: string };
  /** `adminKey`: the smart card's 3DES administration key, 48 upper-case hex digits, for the card client to set (DECISIONS 17.1). */
  device: { id: string; status: DeviceStatus; adminKey?: string };
  credentials: { id: string; type: CredentialType; status: CredentialStatus; der?: Buffer; secret?: string; otpauthUri?: string }[];
  /** The issuing CA's certificate (DER), the chain of the certificates issued. */
  caCertificate?: Buffer;
}

/** What issuing reads from the instance's caches, before the session's transaction. */
interface IssuanceSettings {
  credentialPolicy: CredentialPolicy;
  organizationName: string;
}

/** A credential as the session answers it, with its certificate serial while the session runs. */
type IssuedCredential = SyncOutcome['credentials'][number] & { serial?: string };

/** The device move a completed request makes, by type (DECISIONS 8); unlock pin and update leave the device as it is. */
const DEVICE_MOVE: Partial<Record<ContentRequestType, CompletionMove>> = { issuance: 'completeIssuance', produce: 'completeProduce', recycle: 'recycle' };
/** 160-bit OATH secrets (RFC 4226 recommends at least 128, 160 with HMAC-SHA-1). */
const OATH_SECRET_BYTES = 20;

/**
 * Executes an approved content request from what the card reported (CREDENTIAL-MANAGEMENT.md
 * "SyncSession"), in one transaction under the request's row lock, so that of two sessions for one
 * request exactly one completes it (the other waits, then finds it completed: 409; a unique index on
 * completed sessions is the backstop). Any FAILURE fails the request and changes nothing else. All
 * SUCCESS: the credentials of the device policy are created (certificates signed by the CA in the
 * same transaction, OATH secrets generated and sealed), the device moves, earlier credentials are
 * revoked where the type says, and the request completes. A CSR the CA refuses is a 400 that rolls
 * everything back: the request stays approved for a new attempt.
 */
@Injectable()
export class SyncSessionService {
  constructor(
    private readonly db: Database,
    private readonly requests: ContentRequestRepository,
    private readonly sessions: SyncSessionRepository,
    private readonly credentials: CredentialRepository,
    private readonly devicePolicies: DevicePolicyRepository,
    private readonly policies: PolicyService,
    private readonly devices: RequestedDevices,
    private readonly deviceContents: DeviceContents,
    private readonly ca: CertificateAuthority,
    private readonly users: UserService,
    private readonly organizations: OrganizationService,
    private readonly enrollment: EnrollmentDataRepository,
    private readonly cipher: DataCipher,
    private readonly operatorDependent: OperatorDependentPolicy,
    private readonly audit: AuditLog,
    private readonly clock: Clock,
    private readonly signInSessions: SignInSessionService,
    private readonly notifications: CredentialNotifications,
    private readonly cardAdminKeys: CardAdminKeys,
  ) {}

  async execute(principal: Principal, body: unknown, actor: Actor, scope: RequestScope = {}): Promise<SyncOutcome> {
    const input = parseBody(syncSessionSchema, body, 'SyncSession');
    const org = principal.org;
    const id = randomUUID();
    // The organization's settings come from caches, which on a miss read on a pooled connection: read
    // before the transaction, since inside it that read could wait for a connection that sessions like
    // this one hold. What the request names is read within the transaction, on its connection.
    const settings = await this.prefetch(org);
    const outcome = await this.db.transaction(async (tx) => {
      const now = this.clock.now();
      const request = await this.requests.find(org, input.contentRequest.value, tx, true);
      if (!request || !this.reachable(principal, request, scope))
        throw invalidValue(`contentRequest ${input.contentRequest.value} does not exist in this organization.`);
      if (request.status !== 'approved') {
        throw new DomainError('CONFLICT', `Content request ${request.id} is ${request.status}; a sync session executes only an approved request.`);
      }
      if (request.expires_at.getTime() <= now.getTime()) {
        throw new DomainError('CONFLICT', `Content request ${request.id} expired at ${request.expires_at.toISOString()}; create a new one.`);
      }
      const device = await this.devices.lock(org, request.device_id, tx);
      const presented = input.device;
      if (!device || !device.externalIds.some((e) => e.CUID === presented.CUID && e.ATR.toUpperCase() === presented.ATR.toUpperCase())) {
        throw new DomainError(
          'CONFLICT',
          `The card presented (ATR ${presented.ATR}, CUID ${presented.CUID}) is not device ${request.device_id}, the target of content request ${request.id}.`,
        );
      }
      const failure = input.results.find((result) => result.status === 'FAILURE');
      if (failure) return this.fail(principal, actor, request, device, input.results, failure, id, tx);
      return this.complete(principal, actor, request, device, input.results, id, settings, scope, tx);
    });
    return outcome.credentials.some((c) => c.der) ? { ...outcome, caCertificate: await this.ca.caCertificate(org) } : outcome;
  }

  private async fail(
    principal: Principal,
    actor: Actor,
    request: ContentRequestRow,
    device: TargetDevice,
    results: SyncResult[],
    failure: SyncResult,
    id: string,
    tx: Transaction,
  ): Promise<SyncOutcome> {
    const detail = failure.detail ?? `operation ${failure.operation} failed on the card`;
    const transition = requestTransitionOf('fail');
    const now = this.clock.now();
    await this.requests.move(principal.org, request.id, { status: transition.to, failureDetail: detail, now }, tx);
    await this.record(principal, request, id, 'failed', results, now, tx);
    await this.audit.record(
      {
        org: principal.org,
        ...byActor(actor),
        action: transition.audit,
        target: request.id,
        outcome: 'success',
        details: { session: id, operation: failure.operation, detail },
      },
      tx,
    );
    return { id, request: { id: request.id, status: transition.to }, device: { id: device.id, status: device.status }, credentials: [] };
  }

  private async complete(
    principal: Principal,
    actor: Actor,
    request: ContentRequestRow,
    device: TargetDevice,
    results: SyncResult[],
    id: string,
    settings: IssuanceSettings,
    scope: RequestScope,
    tx: Transaction,
  ): Promise<SyncOutcome> {
    const org = principal.org;
    const now = this.clock.now();
    const via = `sync session ${id}`;
    const move = DEVICE_MOVE[request.type];
    // unlock pin and update act on an issued card; one suspended or revoked since the request was made is not theirs to change.
    if (!move && !TARGET_STATUSES[request.type].includes(device.status)) {
      throw new DomainError('CONFLICT', `Device ${device.id} is ${device.status}; a "${request.type}" request completes only on a device that is ISSUED.`);
    }
    let issued: IssuedCredential[] = [];
    let adminKey: string | undefined;
    if (request.type === 'issuance' || request.type === 'produce' || request.type === 'update') {
      const policy = request.device_policy_id ? await this.devicePolicies.findForShare(org, request.device_policy_id, tx) : undefined;
      if (!policy) throw new DomainError('CONFLICT', `Content request ${request.id} has lost its device policy; cancel it and create a new one.`);
      // A smart card's admin key, for the card client to set (DECISIONS 17.1): computed in this
      // transaction, so that an HSM failure leaves the request approved; never to the cardholder
      // (/Self), who would then answer their own challenge, which is the desk's.
      if (scope.ownerId === undefined && isSmartCardEncoding(device, policy.credential_types))
        adminKey = await this.cardAdminKeys.cardKeyHex(adminKeyCuid(device)!);
      if (request.type === 'update') await this.retire(org, device.id, 'superseded', { leaveWallet: false }, actor, tx);
      const status: CredentialStatus = request.type === 'produce' ? 'ON_HOLD' : 'ISSUED';
      issued = await this.issueCredentials(principal, actor, request, policy, settings, results, status, tx);
      const serials = issued.map((c) => c.serial).filter((serial): serial is string => serial !== undefined);
      // A produced card's certificates wait on hold (certificateHold) until the device is activated.
      if (status === 'ON_HOLD') await this.ca.changeWithin(org, serials, 'on-hold', null, actor, tx);
    }
    if (request.type === 'recycle') await this.retire(org, device.id, 'cessationOfOperation', { leaveWallet: true }, actor, tx);
    // The device shows its credentials and policy: every instance drops what it kept of it, also when
    // the device does not move (an update supersedes its credentials).
    if (request.type !== 'unlock pin') this.deviceContents.changed(org, [device.id], tx);
    const deviceStatus = move ? await this.devices.complete(org, device, move, actor, tx, via) : device.status;
    const transition = requestTransitionOf('complete');
    await this.requests.move(org, request.id, { status: transition.to, now }, tx);
    await this.notifications.contentRequest(org, request, 'completed', tx);
    await this.record(principal, request, id, 'completed', results, now, tx);
    const event = { org, ...byActor(actor), target: request.id, outcome: 'success' as const };
    await this.audit.record(
      { ...event, action: transition.audit, details: { session: id, type: request.type, device: device.id, credentials: issued.map((c) => c.id) } },
      tx,
    );
    if (request.type === 'unlock pin')
      await this.audit.record({ ...event, action: 'content_request.unlock_pin', details: { session: id, device: device.id } }, tx);
    return {
      id,
      request: { id: request.id, status: transition.to },
      device: { id: device.id, status: deviceStatus, ...(adminKey ? { adminKey } : {}) },
      credentials: issued.map(({ serial: _serial, ...rest }) => rest),
    };
  }

  /**
   * One credential per credential type of the device policy, each from the SUCCESS result that names
   * it: certificates signed by the CA from the card's CSR (in this transaction), OATH secrets
   * generated here and stored sealed; each audited (credential.issue).
   */
  private async issueCredentials(
    principal: Principal,
    actor: Actor,
    request: ContentRequestRow,
    policy: DevicePolicyRow,
    { credentialPolicy, organizationName }: IssuanceSettings,
    results: SyncResult[],
    status: CredentialStatus,
    tx: Transaction,
  ): Promise<IssuedCredential[]> {
    const org = principal.org;
    const now = this.clock.now();
    for (const type of policy.credential_types) {
      if (!results.some((result) => result.credentialType === type)) {
        throw invalidValue(`results hold no SUCCESS for the credential type ${type} of device policy "${policy.name}"; report one per credential type.`);
      }
    }
    const owner = request.owner_user_id ? await this.users.find(org, request.owner_user_id, tx) : undefined;
    if (!owner) throw new DomainError('CONFLICT', `Content request ${request.id} has no wallet owner to issue to; cancel it.`);
    const enrollment = new Map(((await this.enrollment.find(org, owner.id, tx))?.attributes ?? []).map((a) => [a.name, a.value]));
    const rows: NewCredential[] = [];
    const answers: IssuedCredential[] = [];
    for (const type of policy.credential_types) {
      const id = randomUUID();
      const base = {
        id,
        org_id: org,
        type,
        status,
        device_id: request.device_id,
        wallet_id: request.wallet_id,
        content_request_id: request.id,
        created_at: now,
      };
      if (type === 'PKI_CERTIFICATE') {
        const csr = results.find((result) => result.credentialType === type)!.csr;
        if (!csr) throw invalidValue('CSR_INVALID: the PKI_CERTIFICATE result needs csr, the PKCS#10 request the card made (PEM or base64 DER).');
        const certificate = await this.ca.issue(
          org,
          {
            userId: owner.id,
            userName: owner.user_name,
            displayName: owner.display_name,
            email: (owner.emails.find((e) => e.primary) ?? owner.emails[0])?.value ?? null,
            userPrincipalName: enrollment.get('userPrincipalName') ?? null,
            objectSid: enrollment.get('objectSid') ?? null,
          },
          csr,
          organizationName,
          actor,
          { tx, lifetimeDays: credentialPolicy.certificateLifetimeDays, keyAlgorithms: credentialPolicy.keyAlgorithms },
        );
        rows.push({
          ...base,
          ...NO_OATH,
          certificate_serial: certificate.serialNumber,
          certificate: {
            serialNumber: certificate.serialNumber,
            subject: certificate.subject,
            issuer: certificate.issuer,
            notBefore: certificate.notBefore.toISOString(),
            notAfter: certificate.notAfter.toISOString(),
            value: certificate.der.toString('base64'),
          },
          expires_at: certificate.notAfter,
        });
        answers.push({ id, type, status, der: certificate.der, serial: certificate.serialNumber });
      } else if (type === 'OATH_TOTP' || type === 'OATH_HOTP') {
        const secret = base32(randomBytes(OATH_SECRET_BYTES));
        const sealed = this.cipher.seal(secret, `credential:${id}`);
        const digits = credentialPolicy.oathDigits;
        const period = type === 'OATH_TOTP' ? credentialPolicy.oathPeriod : null;
        rows.push({
          ...base,
          certificate_serial: null,
          certificate: null,
          oath_key_id: sealed.keyId,
          oath_secret: sealed.sealed,
          oath_digits: digits,
          oath_period: period,
          expires_at: null,
        });
        answers.push({ id, type, status, secret, otpauthUri: otpauthUri(type, organizationName, owner.user_name, secret, digits, period) });
      } else {
        rows.push({ ...base, ...NO_OATH, certificate_serial: null, certificate: null, expires_at: null });
        answers.push({ id, type, status });
      }
    }
    await this.credentials.insert(rows, tx);
    for (const row of rows) {
      await this.audit.record(
        {
          org,
          ...byActor(actor),
          action: 'credential.issue',
          target: row.id,
          outcome: 'success',
          details: {
            type: row.type,
            status,
            device: row.device_id,
            wallet: row.wallet_id,
            ...(row.certificate_serial ? { serial: row.certificate_serial } : {}),
          },
        },
        tx,
      );
    }
    return answers;
  }

  /** Revokes the device's live credentials (update: superseded; recycle: cessationOfOperation, out of the wallet); answers the certificate serials revoked. */
  private async retire(
    org: string,
    deviceId: string,
    reason: RevocationReason,
    options: { leaveWallet: boolean },
    actor: Actor,
    tx: Transaction,
  ): Promise<string[]> {
    const live = await this.credentials.lockOfDevice(org, deviceId, options.leaveWallet ? ['ISSUED', 'ON_HOLD', 'REVOKED'] : ['ISSUED', 'ON_HOLD'], tx);
    const revoking = live.filter((c) => c.status !== 'REVOKED');
    await this.credentials.setStatus(
      org,
      live.map((c) => c.id),
      { status: 'REVOKED', reason, leaveWallet: options.leaveWallet, now: this.clock.now() },
      tx,
    );
    for (const credential of revoking) {
      await this.audit.record(
        {
          org,
          ...byActor(actor),
          action: 'credential.revoke',
          target: credential.id,
          outcome: 'success',
          details: { from: credential.status, reason, device: deviceId },
        },
        tx,
      );
    }
    await this.notifications.credentials(org, revoking, 'revoked', tx);
    const revoked = await this.ca.changeWithin(org, serialsOf(revoking), 'revoked', reason, actor, tx);
    // A superseded smart-card certificate signs nobody in any more: its sessions end with this commit (DECISIONS 14.2).
    await this.signInSessions.endAllOfCertificates(org, revoked, actor, tx);
    return revoked;
  }

  private async record(
    principal: Principal,
    request: ContentRequestRow,
    id: string,
    outcome: 'completed' | 'failed',
    results: SyncResult[],
    now: Date,
    tx: Transaction,
  ) {
    try {
      await this.sessions.insert(
        {
          id,
          org_id: principal.org,
          content_request_id: request.id,
          outcome,
          // What the card reported, without the CSRs (the certificates are what they became).
          results: results.map(({ csr: _csr, ...rest }) => rest),
          executed_by: principal.name,
          created_at: now,
        },
        tx,
      );
    } catch (error) {
      if (isPgError(error, PG_UNIQUE_VIOLATION)) throw new DomainError('CONFLICT', `Content request ${request.id} is completed by another sync session.`);
      throw error;
    }
  }

  /** The organization's credential policy and name (its caches). */
  private async prefetch(org: string): Promise<IssuanceSettings> {
    const [{ policy: credentialPolicy }, organization] = await Promise.all([this.policies.read(org, 'credential'), this.organizations.get(org)]);
    return { credentialPolicy, organizationName: organization.name };
  }

  private reachable(principal: Principal, request: ContentRequestRow, scope: RequestScope): boolean {
    if (scope.ownerId !== undefined) return request.owner_user_id === scope.ownerId;
    return request.owner_groups === null || this.operatorDependent.canReach(principal, { groups: request.owner_groups });
  }
}

const NO_OATH = { oath_key_id: null, oath_secret: null, oath_digits: null, oath_period: null } as const;

function serialsOf(credentials: readonly CredentialRow[]): string[] {
  return credentials.map((c) => c.certificate_serial).filter((serial): serial is string => serial !== null);
}
