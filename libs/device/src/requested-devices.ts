import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { AuditLog, byActor } from '@app/audit';
import { Actor, Clock, DomainError } from '@app/common';
import { ChangeFeed, Transaction } from '@app/persistence';
import { publishDeviceChanges } from './device-changes';
import { DeviceRepository } from './device.repository';
import { ExternalId } from './device.schema';
import { DeviceStatus, transitionOf } from './lifecycle/device-lifecycle';

/** A device as a content request sees it. */
export interface TargetDevice {
  id: string;
  status: DeviceStatus;
  ownerId: string | null;
  /** The ATRs of its {ATR, CUID} pairs, upper-case hexadecimal: what a device policy's deviceTypes match. */
  atrs: string[];
  externalIds: ExternalId[];
}

/** The moves a completed content request makes (DECISIONS 8), with the audit event of each. */
const COMPLETIONS = { completeIssuance: 'device.issue', completeProduce: 'device.produce', recycle: 'device.recycle' } as const;
export type CompletionMove = keyof typeof COMPLETIONS;

/**
 * The devices content requests act on (CREDENTIAL-MANAGEMENT.md "ContentRequest lifecycle"), as the
 * credential-management library asks for them: locked in the caller's transaction, so that the
 * request's checks and its move of the device see one state; bound to a wallet's owner (`bind`,
 * AVAILABLE -> ASSIGNED) and given back (`unbind`) by the lifecycle table's rows, audited per device
 * like the Device entry points; each move publishes the device's change with the caller's commit.
 */
@Injectable()
export class RequestedDevices {
  constructor(
    private readonly devices: DeviceRepository,
    private readonly audit: AuditLog,
    private readonly clock: Clock,
    private readonly changes: ChangeFeed,
  ) {}

  async lock(orgId: string, id: string, tx: Transaction): Promise<TargetDevice | undefined> {
    const row = await this.devices.lockTarget(orgId, id, tx);
    return (
      row && {
        id: row.id,
        status: row.status,
        ownerId: row.owner_user_id,
        atrs: row.external_ids.map((e) => e.ATR.toUpperCase()),
        externalIds: row.external_ids,
      }
    );
  }

  /**
   * The move a sync session's success makes on the locked device: issuance -> ISSUED (issuanceDate
   * set), produce -> PRODUCED, recycle -> AVAILABLE (owner cleared). Answers the device's new status;
   * a device not in a status the move starts from is a 409 (it changed since the request was made).
   */
  async complete(orgId: string, device: TargetDevice, move: CompletionMove, actor: Actor, tx: Transaction, via: string): Promise<DeviceStatus> {
    const transition = transitionOf(move);
    if (!transition.from.includes(device.status)) {
      throw new DomainError('CONFLICT', `Device ${device.id} is ${device.status}; completing this request needs it ${transition.from.join(' or ')}.`);
    }
    const moved = await this.devices.move(
      orgId,
      device.id,
      {
        status: transition.to!,
        reason: transition.reason.default,
        clearOwner: transition.clearsOwner,
        setIssuedAt: transition.setsIssuanceDate,
        now: this.clock.now(),
      },
      tx,
    );
    publishDeviceChanges(this.changes, tx, orgId, [device.id]);
    await this.audit.record(
      {
        org: orgId,
        ...byActor(actor),
        action: COMPLETIONS[move],
        target: device.id,
        outcome: 'success',
        details: {
          from: device.status,
          to: moved.status,
          reason: moved.reason,
          via,
          ...(transition.clearsOwner && device.ownerId ? { previousOwner: device.ownerId } : {}),
        },
      },
      tx,
    );
    return moved.status;
  }

  /**
   * A software authenticator for `ownerId` (DECISIONS 14.4): a device without {ATR, CUID}, ISSUED to
   * them in the caller's transaction, so that the credential a person enrols themselves has a device
   * like every other and the desk suspends and revokes it as any device. Audited `device.create` and
   * `device.issue` (details `via`, `kind: software_authenticator`). Answers the device id.
   */
  async issueSoftwareAuthenticator(orgId: string, ownerId: string, actor: Actor, tx: Transaction, via: string): Promise<string> {
    const id = randomUUID();
    const now = this.clock.now();
    await this.devices.insertIssuedSoftware(orgId, id, ownerId, now, tx);
    publishDeviceChanges(this.changes, tx, orgId, [id]);
    const event = { org: orgId, ...byActor(actor), target: id, outcome: 'success' as const };
    await this.audit.record({ ...event, action: 'device.create', details: { externalIds: [], kind: 'software_authenticator', via } }, tx);
    await this.audit.record({ ...event, action: 'device.issue', details: { from: 'AVAILABLE', to: 'ISSUED', reason: 'NONE', owner: ownerId, via } }, tx);
    return id;
  }

  /** The devices the user holds in one of `statuses` (a wallet's device limit counts them). */
  countOwnedBy(orgId: string, ownerId: string, statuses: readonly DeviceStatus[], tx: Transaction): Promise<number> {
    return this.devices.countOwnedBy(orgId, ownerId, statuses, tx);
  }

  /** AVAILABLE -> ASSIGNED, owned by `ownerId`; the device must be locked and AVAILABLE (the caller checked). */
  async bind(orgId: string, device: TargetDevice, ownerId: string, actor: Actor, tx: Transaction, via: string): Promise<void> {
    const bind = transitionOf('bind');
    await this.devices.move(
      orgId,
      device.id,
      { status: bind.to!, reason: bind.reason.default, clearOwner: false, setIssuedAt: false, now: this.clock.now(), owner: ownerId },
      tx,
    );
    publishDeviceChanges(this.changes, tx, orgId, [device.id]);
    await this.audit.record(
      {
        org: orgId,
        ...byActor(actor),
        action: 'device.assign',
        target: device.id,
        outcome: 'success',
        details: { from: device.status, to: bind.to, owner: ownerId, via },
      },
      tx,
    );
  }

  /**
   * ASSIGNED -> AVAILABLE, owner cleared, when the request that bound it ends without completing
   * (cancel, deny, expiry). A device that is no longer ASSIGNED (terminated meanwhile with its user) is
   * left as it is; answers whether it moved.
   */
  async unbind(orgId: string, deviceId: string, actor: Actor, tx: Transaction, via: string): Promise<boolean> {
    const device = await this.lock(orgId, deviceId, tx);
    const unbind = transitionOf('unbind');
    if (!device || !unbind.from.includes(device.status)) return false;
    await this.devices.move(
      orgId,
      device.id,
      { status: unbind.to!, reason: unbind.reason.default, clearOwner: true, setIssuedAt: false, now: this.clock.now() },
      tx,
    );
    publishDeviceChanges(this.changes, tx, orgId, [device.id]);
    await this.audit.record(
      {
        org: orgId,
        ...byActor(actor),
        action: 'device.update',
        target: device.id,
        outcome: 'success',
        details: { from: device.status, to: unbind.to, reason: unbind.reason.default, previousOwner: device.ownerId, via },
      },
      tx,
    );
    return true;
  }
}
