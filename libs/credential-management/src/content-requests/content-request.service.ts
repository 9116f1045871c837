import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { Actor, AuditLog, byActor } from '@app/audit';
import { OperatorDependentPolicy, Permission, RoleCatalog } from '@app/auth';
import { Clock, DomainError, IfMatch, Principal, ScimSearch, applyPatch, invalidValue, notFound, parseBody, preconditionFailed, isUuid } from '@app/common';
import { RequestedDevices, TargetDevice } from '@app/device';
import { Database, Transaction } from '@app/persistence';
import { CertificateAuthority } from '@app/pki';
import { CredentialNotifications } from '../notifications/credential-notifications';
import { DevicePolicyRepository, DevicePolicyRow } from '../device-policies/device-policy.repository';
import { PolicyService } from '../policies/policy.service';
import { WalletPolicy } from '../policies/policy.schema';
import { WalletRepository, WalletRow } from '../wallets/wallet.repository';
import {
  ContentRequestAction,
  ContentRequestType,
  DEFAULT_LIFETIME_MS,
  OPEN_STATUSES,
  TARGET_STATUSES,
  bindsDevice,
  requestTransitionOf,
} from './content-request-lifecycle';
import { ContentRequestRepository, ContentRequestRow } from './content-request.repository';
import { CardAdminKeys, adminKeyCuid } from './card-admin-keys';
import { CONTENT_REQUEST_SCHEMA, NewContentRequest, actionSchema, createContentRequestSchema, patchedContentRequestSchema } from './content-request.schema';

/** The permission that creates each type (DECISIONS 5.2; produce and update are Device Management's, as issuance is). */
const CREATE_PERMISSION: Readonly<Record<ContentRequestType, Permission>> = {
  issuance: Permission.ContentRequestIssuanceCreate,
  produce: Permission.ContentRequestIssuanceCreate,
  update: Permission.ContentRequestIssuanceCreate,
  recycle: Permission.ContentRequestRecycleCreate,
  'unlock pin': Permission.ContentRequestUnlockPinCreate,
};

/** What a cardholder may ask for on their own devices (/Self/ContentRequest). */
export const SELF_REQUEST_TYPES = ['unlock pin', 'recycle'] as const satisfies readonly ContentRequestType[];

/** Devices a wallet holds for its device limit (CREDENTIAL-MANAGEMENT.md, "Open points"). */
const HELD_STATUSES = ['ASSIGNED', 'PRODUCED', 'ISSUED', 'ON_HOLD'] as const;
const SWEEP_BATCH = 100;
const SYSTEM: Actor = { name: 'system' };
/** The parameter of an `unlock pin` request that carries the card's challenge (offline unlock, DECISIONS 17.1). */
const CHALLENGE_PARAMETER = 'challenge';

/** The 8-byte challenge of an offline unlock, or undefined for any other request. */
function offlineChallenge(input: NewContentRequest, scope: RequestScope): Buffer | undefined {
  const parameter = input.type === 'unlock pin' ? input.parameters?.find((p) => p.id === CHALLENGE_PARAMETER) : undefined;
  if (parameter === undefined) return undefined;
  if (scope.ownerId !== undefined) throw invalidValue('parameters: a challenge is answered to an operator at the desk, not to the cardholder.');
  if (parameter.encoding !== undefined && parameter.encoding !== 'hex')
    throw invalidValue(`parameters: the challenge's encoding must be "hex", not "${parameter.encoding}".`);
  if (!/^[0-9A-Fa-f]{16}$/.test(parameter.value)) {
    throw invalidValue("parameters: the challenge must be 16 hexadecimal digits (the 8 bytes the person's screen shows).");
  }
  return Buffer.from(parameter.value, 'hex');
}

/** Whose request: a cardholder acting on their own (/Self), or an operator. */
export interface RequestScope {
  /** /Self: the caller's user id; the device must be theirs (else 404) and the type one of SELF_REQUEST_TYPES. */
  ownerId?: string;
}

/** How a request is created on behalf of another entry point (DeviceFlow). */
export interface CreationOptions {
  /** The caller's permission was checked by that entry point (a DeviceFlow's own, DECISIONS 5.2). */
  authorized?: true;
  /** Runs in the creating transaction, so that what the entry point records commits with the request. */
  within?: (request: { id: string; status: string }, tx: Transaction) => Promise<void>;
}

/**
 * Content requests (CREDENTIAL-MANAGEMENT.md "ContentRequest lifecycle"): created with every check of
 * the contract in one transaction that holds the wallet's and the device's row locks (so the wallet's
 * device limit and the device's status cannot change under it, and a unique index keeps one open
 * request per device), moved only as content-request-lifecycle.ts allows, each move audited with
 * its device's, expired when read past expiresAt and by a periodic sweep.
 */
@Injectable()
export class ContentRequestService {
  constructor(
    private readonly db: Database,
    private readonly requests: ContentRequestRepository,
    private readonly wallets: WalletRepository,
    private readonly devicePolicies: DevicePolicyRepository,
    private readonly policies: PolicyService,
    private readonly devices: RequestedDevices,
    private readonly ca: CertificateAuthority,
    private readonly roles: RoleCatalog,
    private readonly operatorDependent: OperatorDependentPolicy,
    private readonly audit: AuditLog,
    private readonly clock: Clock,
    private readonly notifications: CredentialNotifications,
    private readonly cardAdminKeys: CardAdminKeys,
  ) {}

  async create(principal: Principal, body: unknown, actor: Actor, scope: RequestScope = {}, options: CreationOptions = {}): Promise<ContentRequestRow> {
    const input = parseBody(createContentRequestSchema, body, 'ContentRequest');
    if (scope.ownerId !== undefined && !(SELF_REQUEST_TYPES as readonly string[]).includes(input.type)) {
      throw invalidValue(
        `A cardholder may ask for ${SELF_REQUEST_TYPES.map((t) => `"${t}"`).join(' or ')} requests on their own devices, not "${input.type}".`,
      );
    }
    if (scope.ownerId === undefined && !options.authorized) this.roles.assertAllows(principal.role, CREATE_PERMISSION[input.type]);
    const challenge = offlineChallenge(input, scope);
    const now = this.clock.now();
    const expiresAt = this.expiry(input.type, input.expiresAt, now, now);
    const id = randomUUID();
    // Read before the transaction: a read inside it on another pooled connection could wait for a
    // connection that transactions like this one hold (the pool would deadlock until its timeout).
    const { policy: walletPolicy } = await this.policies.read(principal.org, 'wallet');
    const created = await this.db.transaction(async (tx) => {
      const checked = await this.checkCreation(principal, input, scope, walletPolicy, tx);
      const status = checked.policy?.requires_approval && bindsDevice(input.type) ? 'requested' : 'approved';
      const created: ContentRequestRow = {
        id,
        org_id: principal.org,
        type: input.type,
        status,
        device_id: checked.device.id,
        wallet_id: checked.wallet?.id ?? null,
        device_policy_id: checked.policy?.id ?? null,
        device_policy_name: checked.policy?.name ?? null,
        owner_user_id: checked.wallet?.owner_user_id ?? null,
        owner_user_name: checked.wallet?.owner_user_name ?? null,
        owner_groups: checked.wallet?.owner_groups ?? null,
        reason: input.reason ?? 'NONE',
        // An offline unlock's challenge is not kept (nor its response): DECISIONS 17.1.
        parameters: (input.parameters ?? []).filter((p) => challenge === undefined || p.id !== CHALLENGE_PARAMETER),
        requested_by: principal.name,
        requested_by_kind: principal.kind,
        requested_by_id: principal.subjectId,
        approved_by: null,
        failure_detail: null,
        expires_at: expiresAt,
        created_at: now,
        updated_at: now,
        version: 1,
      };
      const outcome = await this.requests.insert(created, tx);
      if (outcome === 'DEVICE_BUSY') throw busy(checked.device.id, await this.requests.findOpenOnDevice(principal.org, checked.device.id, tx));
      if (bindsDevice(input.type))
        await this.devices.bind(principal.org, checked.device, checked.wallet!.owner_user_id, actor, tx, `content_request.create ${id}`);
      await this.audit.record(
        {
          org: principal.org,
          ...byActor(actor),
          action: 'content_request.create',
          target: id,
          outcome: 'success',
          details: { type: input.type, status, device: checked.device.id, wallet: checked.wallet?.id ?? null, devicePolicy: checked.policy?.id ?? null },
        },
        tx,
      );
      await options.within?.({ id, status }, tx);
      if (challenge !== undefined) return this.answerChallenge(principal, actor, created, checked.device, challenge, tx);
      return created;
    });
    // The row as stored, from what the checks read: no statement to read it back.
    return created;
  }

  /**
   * The offline unlock (DECISIONS 17.1): the response to the card's challenge, computed from the
   * card's administration key, answered once in `parameters` and never stored; the request is
   * completed at once and the unlock audited without the challenge or the response.
   */
  private async answerChallenge(
    principal: Principal,
    actor: Actor,
    created: ContentRequestRow,
    device: TargetDevice,
    challenge: Buffer,
    tx: Transaction,
  ): Promise<ContentRequestRow> {
    const cuid = adminKeyCuid(device);
    if (!cuid) throw new DomainError('CONFLICT', `Device ${device.id} has no CUID; a challenge can be answered only for a card with one.`);
    const response = await this.cardAdminKeys.response(cuid, challenge);
    const now = this.clock.now();
    const transition = requestTransitionOf('complete');
    await this.requests.move(principal.org, created.id, { status: transition.to, now }, tx);
    const completed: ContentRequestRow = { ...created, status: transition.to, updated_at: now, version: created.version + 1 };
    await this.notifications.contentRequest(principal.org, completed, 'completed', tx);
    const event = { org: principal.org, ...byActor(actor), target: created.id, outcome: 'success' as const };
    await this.audit.record({ ...event, action: transition.audit, details: { type: created.type, device: device.id, offline: true } }, tx);
    await this.audit.record({ ...event, action: 'content_request.unlock_pin', details: { device: device.id, offline: true } }, tx);
    return { ...completed, parameters: [{ id: 'response', value: response.toString('hex').toUpperCase(), type: 'string', encoding: 'hex' }] };
  }

  /**
   * POST /ContentRequest/validate: the end state an `update` request would reach, from the same
   * checks as its creation, storing nothing. Credentials are predicted from the device policy's
   * credential types (the device's current credentials are replaced by them).
   */
  async validate(principal: Principal, body: unknown): Promise<{ device: { value: string; status: string }; credentials: { type: string; status: string }[] }> {
    const input = parseBody(createContentRequestSchema, body, 'ContentRequest');
    if (input.type !== 'update')
      throw invalidValue(`Only "update" requests can be validated; this one is "${input.type}". Send the body of an update request.`);
    this.expiry(input.type, input.expiresAt, this.clock.now(), this.clock.now());
    const { policy: walletPolicy } = await this.policies.read(principal.org, 'wallet');
    return this.db.transaction(async (tx) => {
      const checked = await this.checkCreation(principal, input, {}, walletPolicy, tx);
      return {
        device: { value: checked.device.id, status: checked.device.status },
        credentials: checked.policy!.credential_types.map((type) => ({ type, status: 'ISSUED' })),
      };
    });
  }

  async get(principal: Principal, id: string, scope: RequestScope = {}): Promise<ContentRequestRow> {
    const row = isUuid(id) ? await this.requests.find(principal.org, id) : undefined;
    if (!row || !this.reachable(principal, row, scope)) throw requestNotFound(id);
    if (!isOverdue(row, this.clock.now())) return row;
    await this.expire(principal.org, row.id, SYSTEM);
    return (await this.requests.find(principal.org, row.id))!;
  }

  search(principal: Principal, search: ScimSearch, scope: RequestScope = {}): Promise<{ rows: ContentRequestRow[]; total: number }> {
    return this.requests.search(principal.org, search, { groups: this.operatorDependent.groupsOf(principal), ownerId: scope.ownerId });
  }

  /** approve, deny, cancel, retry, and DELETE (a cancel answered 204). */
  async act(
    principal: Principal,
    id: string,
    action: ContentRequestAction | 'delete',
    body: unknown,
    actor: Actor,
    scope: RequestScope = {},
  ): Promise<ContentRequestRow> {
    parseBody(actionSchema, body ?? {}, `${action} request`);
    const transition = requestTransitionOf(action);
    return this.change(
      principal,
      id,
      actor,
      scope,
      undefined,
      async (row, tx) => {
        if (action === 'approve' || action === 'deny') this.assertFourEyes(principal, row, action);
        const now = this.clock.now();
        const approvedBy = action === 'approve' ? principal.name : undefined;
        const failureDetail = action === 'retry' ? null : undefined;
        await this.requests.move(principal.org, row.id, { status: transition.to, approvedBy, failureDetail, now }, tx);
        if (action === 'approve' || action === 'deny')
          await this.notifications.contentRequest(principal.org, row, action === 'approve' ? 'approved' : 'denied', tx);
        return {
          audit: transition.audit,
          details: { from: row.status, to: transition.to },
          releases: transition.releasesDevice,
          row: {
            ...row,
            status: transition.to,
            approved_by: approvedBy ?? row.approved_by,
            failure_detail: failureDetail === null ? null : row.failure_detail,
            updated_at: now,
          },
        };
      },
      action,
    );
  }

  /** PATCH (RFC 7644 PatchOp) of reason, parameters and expiresAt, only while `requested`. */
  async patch(principal: Principal, id: string, body: unknown, actor: Actor, ifMatch?: IfMatch): Promise<ContentRequestRow> {
    return this.change(
      principal,
      id,
      actor,
      {},
      ifMatch,
      async (row, tx) => {
        const view = { reason: row.reason, parameters: row.parameters, expiresAt: row.expires_at.toISOString() };
        const attributes = ['reason', 'parameters', 'expiresAt', 'type', 'status', 'target', 'wallet', 'requestedBy', 'approvedBy', 'failure'];
        const patched = applyPatch({ ...view }, body, { coreSchema: CONTENT_REQUEST_SCHEMA, extensions: [], attributes });
        const readOnly = Object.keys(patched).filter((key) => !(key in view));
        if (readOnly.length > 0) {
          throw new DomainError('MUTABILITY', `Only reason, parameters and expiresAt can be changed with PATCH; ${readOnly.join(', ')} cannot.`);
        }
        const changed = parseBody(
          patchedContentRequestSchema,
          { reason: patched.reason, parameters: patched.parameters ?? [], expiresAt: patched.expiresAt },
          'ContentRequest',
        );
        const now = this.clock.now();
        const expiresAt = this.expiry(row.type, changed.expiresAt, row.created_at, now);
        await this.requests.update(principal.org, row.id, { reason: changed.reason, parameters: changed.parameters, expiresAt }, now, tx);
        const touched = Object.keys(view).filter(
          (key) =>
            JSON.stringify(view[key as keyof typeof view]) !==
            JSON.stringify(key === 'expiresAt' ? expiresAt.toISOString() : changed[key as keyof typeof changed]),
        );
        return {
          audit: 'content_request.update',
          details: { changed: touched },
          releases: false,
          row: { ...row, reason: changed.reason, parameters: changed.parameters, expires_at: expiresAt, updated_at: now },
        };
      },
      'patch',
    );
  }

  /** Expires every open request past its expiresAt (the periodic sweep); answers how many. */
  async expireOverdue(): Promise<number> {
    let expired = 0;
    for (;;) {
      const overdue = await this.requests.overdue(this.clock.now(), SWEEP_BATCH);
      for (const { org_id, id } of overdue) if (await this.expire(org_id, id, SYSTEM)) expired++;
      if (overdue.length < SWEEP_BATCH) return expired;
    }
  }

  /** Expires one request if it is still open and overdue, under its row lock; answers whether it did. */
  private async expire(orgId: string, id: string, actor: Actor): Promise<boolean> {
    const transition = requestTransitionOf('expire');
    return this.db.transaction(async (tx) => {
      const row = await this.requests.find(orgId, id, tx, true);
      if (!row || !isOverdue(row, this.clock.now())) return false;
      await this.requests.move(orgId, id, { status: transition.to, now: this.clock.now() }, tx);
      if (bindsDevice(row.type)) await this.devices.unbind(orgId, row.device_id, actor, tx, `content_request.expire ${id}`);
      await this.audit.record(
        {
          org: orgId,
          ...byActor(actor),
          action: transition.audit,
          target: id,
          outcome: 'success',
          details: { from: row.status, to: transition.to, expiresAt: row.expires_at.toISOString() },
        },
        tx,
      );
      return true;
    });
  }

  /**
   * One move of a request under its row lock: reachable (else 404), current (If-Match), not overdue
   * (an overdue request is expired first, and the move refused), allowed from its status by the
   * lifecycle table (else 409 naming the status); the device is released when the move says so.
   */
  private async change(
    principal: Principal,
    id: string,
    actor: Actor,
    scope: RequestScope,
    ifMatch: IfMatch | undefined,
    work: (
      row: ContentRequestRow,
      tx: Transaction,
    ) => Promise<{ audit: ReturnType<typeof requestTransitionOf>['audit']; details: Record<string, unknown>; releases: boolean; row: ContentRequestRow }>,
    trigger: ContentRequestAction | 'delete' | 'patch',
  ): Promise<ContentRequestRow> {
    if (!isUuid(id)) throw requestNotFound(id);
    const transition = requestTransitionOf(trigger);
    const outcome = await this.db.transaction(async (tx) => {
      const row = await this.requests.find(principal.org, id, tx, true);
      if (!row || !this.reachable(principal, row, scope)) throw requestNotFound(id);
      if (ifMatch && !ifMatch.matches(row.version)) throw preconditionFailed(`ContentRequest ${id}`, row.version);
      if (isOverdue(row, this.clock.now())) return { overdue: row, row };
      if (!transition.from.includes(row.status)) {
        const verb = trigger === 'patch' ? 'PATCH' : trigger === 'delete' ? 'DELETE' : trigger;
        throw new DomainError('CONFLICT', `Content request ${id} is ${row.status}; ${verb} applies only to a request that is ${transition.from.join(' or ')}.`);
      }
      const result = await work(row, tx);
      if (result.releases && bindsDevice(row.type)) await this.devices.unbind(principal.org, row.device_id, actor, tx, `${result.audit} ${id}`);
      await this.audit.record({ org: principal.org, ...byActor(actor), action: result.audit, target: id, outcome: 'success', details: result.details }, tx);
      // The row as the move left it (every move bumps the version): no statement to read it back.
      return { overdue: undefined, row: { ...result.row, version: row.version + 1 } };
    });
    if (outcome.overdue) {
      await this.expire(principal.org, outcome.overdue.id, SYSTEM);
      throw new DomainError(
        'CONFLICT',
        `Content request ${id} is expired (its expiresAt, ${outcome.overdue.expires_at.toISOString()}, has passed); create a new one.`,
      );
    }
    return outcome.row;
  }

  private assertFourEyes(principal: Principal, row: ContentRequestRow, action: 'approve' | 'deny'): void {
    if (row.requested_by_kind === principal.kind && row.requested_by_id === principal.subjectId) {
      throw new DomainError('CONFLICT', `Content request ${row.id} was requested by ${row.requested_by}; another operator must ${action} it (four eyes).`);
    }
    if (principal.kind === 'user' && row.owner_user_id === principal.subjectId) {
      throw new DomainError('CONFLICT', `Content request ${row.id} is for your own wallet; another operator must ${action} it (four eyes).`);
    }
  }

  /**
   * The contract's checks on creation, under the wallet's and the device's row locks: the wallet,
   * the device and the policy exist and are reachable; the device is in a status the type accepts and
   * belongs to the wallet; for issuance and produce, the wallet is ACTIVE and below its device limit,
   * the policy allows the device's type and the owner's groups; a policy with certificates needs an
   * active CA.
   */
  private async checkCreation(
    principal: Principal,
    input: NewContentRequest,
    scope: RequestScope,
    walletPolicy: WalletPolicy,
    tx: Transaction,
  ): Promise<{ device: TargetDevice; wallet?: WalletRow; policy?: DevicePolicyRow }> {
    const { type } = input;
    if (bindsDevice(type) && !input.wallet)
      throw invalidValue(`A${type === 'issuance' ? 'n' : ''} ${type} request needs wallet: {value: <wallet id>}, the wallet the device is issued to.`);
    if ((bindsDevice(type) || type === 'update') && !input.target.devicePolicy) {
      throw invalidValue(
        `A${type === 'update' ? 'n' : type === 'issuance' ? 'n' : ''} ${type} request needs target.devicePolicy: {value: <device policy id>}, what goes on the device.`,
      );
    }
    let wallet = input.wallet ? await this.wallets.find(principal.org, input.wallet.value, tx, true) : undefined;
    if (input.wallet && (!wallet || !this.operatorDependent.canReach(principal, { groups: wallet.owner_groups }))) {
      throw invalidValue(`wallet ${input.wallet.value} does not exist in this organization.`);
    }
    const device = await this.devices.lock(principal.org, input.target.device.value, tx);
    if (!device) throw invalidValue(`target.device ${input.target.device.value} does not exist in this organization.`);
    if (scope.ownerId !== undefined && device.ownerId !== scope.ownerId) throw notFound(`Device ${device.id} is not one of your devices.`);
    if (device.ownerId !== null) {
      const ownerWallet = await this.wallets.findByOwner(principal.org, device.ownerId, tx);
      if (wallet && ownerWallet && wallet.id !== ownerWallet.id)
        throw invalidValue(`Device ${device.id} belongs to wallet ${ownerWallet.id}, not to wallet ${wallet.id}.`);
      wallet ??= ownerWallet;
      if (wallet && !this.operatorDependent.canReach(principal, { groups: wallet.owner_groups })) {
        throw invalidValue(`target.device ${input.target.device.value} does not exist in this organization.`);
      }
    }
    if (!TARGET_STATUSES[type].includes(device.status)) {
      throw new DomainError(
        'CONFLICT',
        `Device ${device.id} is ${device.status}; a "${type}" request needs a device that is ${TARGET_STATUSES[type].join(' or ')}.`,
      );
    }
    if ((type === 'unlock pin' || type === 'update') && !wallet)
      throw new DomainError('CONFLICT', `Device ${device.id} has no owner; a "${type}" request needs an issued device.`);
    let policy: DevicePolicyRow | undefined;
    if (input.target.devicePolicy) {
      policy = await this.devicePolicies.findForShare(principal.org, input.target.devicePolicy.value, tx);
      if (!policy) throw invalidValue(`target.devicePolicy ${input.target.devicePolicy.value} does not exist in this organization.`);
    }
    if (bindsDevice(type)) await this.checkIssuance(principal, device, wallet!, policy!, walletPolicy, tx);
    if (policy?.credential_types.includes('PKI_CERTIFICATE')) await this.ca.assertCanIssue(principal.org, tx);
    return { device, wallet, policy };
  }

  private async checkIssuance(
    principal: Principal,
    device: TargetDevice,
    wallet: WalletRow,
    policy: DevicePolicyRow,
    walletPolicy: WalletPolicy,
    tx: Transaction,
  ): Promise<void> {
    if (wallet.status !== 'ACTIVE') throw new DomainError('CONFLICT', `Wallet ${wallet.id} is ${wallet.status}; resume it before issuing to it.`);
    if (policy.device_types.length > 0 && !device.atrs.some((atr) => policy.device_types.some((type) => atr.startsWith(type.toUpperCase())))) {
      throw invalidValue(
        `Device policy "${policy.name}" allows the device types ${policy.device_types.join(', ')} (ATR prefixes); device ${device.id} has the ATR ${device.atrs.join(', ')}, which matches none.`,
      );
    }
    if (policy.group_ids.length > 0 && !policy.group_names.some((group) => wallet.owner_groups.includes(group))) {
      throw new DomainError(
        'FORBIDDEN',
        `Device policy "${policy.name}" is for the groups ${policy.group_names.join(', ')}; ${wallet.owner_user_name} is in ${wallet.owner_groups.length > 0 ? wallet.owner_groups.join(', ') : 'no group'}.`,
      );
    }
    const held = await this.devices.countOwnedBy(principal.org, wallet.owner_user_id, HELD_STATUSES, tx);
    if (held >= walletPolicy.maxDevicesPerWallet) {
      throw new DomainError(
        'CONFLICT',
        `Wallet ${wallet.id} holds ${held} device${held === 1 ? '' : 's'}, the most WalletPolicy maxDevicesPerWallet (${walletPolicy.maxDevicesPerWallet}) allows; terminate or recycle one first.`,
      );
    }
  }

  /** expiresAt: the type's default lifetime from `from`, or an earlier time the body asks for (never later, never past). */
  private expiry(type: ContentRequestType, asked: string | undefined, from: Date, now: Date): Date {
    const latest = new Date(from.getTime() + DEFAULT_LIFETIME_MS[type]);
    if (asked === undefined) return latest;
    const at = new Date(asked);
    if (at.getTime() <= now.getTime()) throw invalidValue(`expiresAt ${asked} is not in the future.`);
    if (at.getTime() > latest.getTime())
      throw invalidValue(
        `expiresAt ${asked} is later than a "${type}" request may stay open (until ${latest.toISOString()}); ask for an earlier time or leave it out.`,
      );
    return at;
  }

  private reachable(principal: Principal, row: ContentRequestRow, scope: RequestScope): boolean {
    if (scope.ownerId !== undefined) return row.owner_user_id === scope.ownerId;
    return row.owner_groups === null || this.operatorDependent.canReach(principal, { groups: row.owner_groups });
  }
}

function isOverdue(row: ContentRequestRow, now: Date): boolean {
  return (OPEN_STATUSES as readonly string[]).includes(row.status) && row.expires_at.getTime() <= now.getTime();
}

function busy(deviceId: string, open?: { id: string; status: string }): DomainError {
  const which = open ? `request ${open.id} (${open.status})` : 'another request';
  return new DomainError('CONFLICT', `Device ${deviceId} already has an open content request, ${which}; cancel it or wait for it to end.`);
}

function requestNotFound(id: string): DomainError {
  return notFound(`Content request ${id.slice(0, 64)} does not exist.`);
}
