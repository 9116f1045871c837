import { Injectable } from '@nestjs/common';
import { AuditLog, byActor } from '@app/audit';
import { Actor, Clock } from '@app/common';
import { ChangeFeed, Transaction } from '@app/persistence';
import { publishDeviceChanges } from './device-changes';
import { DeviceRepository } from './device.repository';
import { DeviceMoveListeners } from './device-move-listeners';
import { DEVICE_STATUSES, DeviceReason, DeviceStatus, transitionOf } from './lifecycle/device-lifecycle';

export interface OwnedDevice {
  id: string;
  status: DeviceStatus;
}

/**
 * The devices of a user, as the credential-management library asks for them (a wallet holds its
 * owner's devices; CREDENTIAL-MANAGEMENT.md "Resources"): listed, counted, and suspended or resumed
 * together. Moves follow the lifecycle table and are audited per device like the Device entry points,
 * in the caller's transaction, whose commit publishes each moved device's change.
 */
@Injectable()
export class OwnedDevices {
  constructor(
    private readonly devices: DeviceRepository,
    private readonly audit: AuditLog,
    private readonly clock: Clock,
    private readonly moves: DeviceMoveListeners,
    private readonly changes: ChangeFeed,
  ) {}

  /** The devices each of these users owns, oldest first. */
  ownedBy(orgId: string, ownerIds: readonly string[]): Promise<Map<string, OwnedDevice[]>> {
    return this.devices.ownedBy(orgId, ownerIds);
  }

  /** Every status with its count (zeros included); `groups` limits an Operator Dependent caller as its reads are. */
  async countByStatus(orgId: string, groups: readonly string[] | undefined): Promise<Record<DeviceStatus, number>> {
    const counts = await this.devices.countByStatus(orgId, groups);
    return Object.fromEntries(DEVICE_STATUSES.map((status) => [status, counts.get(status) ?? 0])) as Record<DeviceStatus, number>;
  }

  /** Suspends every ISSUED device of the owner (wallet suspend); answers the ids moved. */
  suspendAllOf(orgId: string, ownerId: string, reason: DeviceReason, actor: Actor, tx: Transaction): Promise<string[]> {
    return this.moveAll(orgId, ownerId, 'suspend', reason, actor, tx);
  }

  /**
   * Resumes those of `deviceIds` (the ones a wallet suspension moved) that the owner still has ON_HOLD;
   * a device put on hold on its own (a lost card) stays so. Answers the ids moved.
   */
  resumeAllOf(orgId: string, ownerId: string, deviceIds: readonly string[], actor: Actor, tx: Transaction): Promise<string[]> {
    return this.moveAll(orgId, ownerId, 'resume', transitionOf('resume').reason.default, actor, tx, deviceIds);
  }

  /**
   * Revokes the owner's software authenticators (the devices their self-enrolled factors are on,
   * DECISIONS 14.4), as POST /Device/{id}/revoke does, in the caller's transaction: an administrator's
   * reset of the person's factors. Cards are left as they are. Answers the ids revoked.
   */
  async revokeSoftwareAuthenticatorsOf(
    orgId: string,
    ownerId: string,
    actor: Actor,
    tx: Transaction,
    options: { only?: string; via?: string } = {},
  ): Promise<string[]> {
    const transition = transitionOf('revoke');
    const now = this.clock.now();
    const via = options.via ?? 'user.factors.reset';
    const devices = (await this.devices.lockSoftwareOwnedBy(orgId, ownerId, transition.from, tx)).filter(
      (device) => options.only === undefined || device.id === options.only,
    );
    for (const device of devices) {
      await this.devices.move(orgId, device.id, { status: transition.to!, reason: 'NONE', clearOwner: false, setIssuedAt: false, now }, tx);
      await this.audit.record(
        {
          org: orgId,
          ...byActor(actor),
          action: 'device.revoke',
          target: device.id,
          outcome: 'success',
          details: { from: device.status, to: transition.to, reason: 'NONE', via },
        },
        tx,
      );
      await this.moves.moved({ orgId, deviceId: device.id, action: 'revoke', reason: 'NONE', actor }, tx);
    }
    const ids = devices.map((device) => device.id);
    publishDeviceChanges(this.changes, tx, orgId, ids);
    return ids;
  }

  /** Those of `deviceIds` that are software authenticators (no {ATR, CUID}): a person's own factors live on them, not on a card. */
  softwareAmong(orgId: string, deviceIds: readonly string[], tx?: Transaction): Promise<Set<string>> {
    return this.devices.softwareAmong(orgId, deviceIds, tx);
  }

  private async moveAll(
    orgId: string,
    ownerId: string,
    action: 'suspend' | 'resume',
    reason: DeviceReason,
    actor: Actor,
    tx: Transaction,
    only?: readonly string[],
  ): Promise<string[]> {
    const transition = transitionOf(action);
    const now = this.clock.now();
    const moved: string[] = [];
    const candidates = await this.devices.lockOwnedBy(orgId, ownerId, transition.from, tx);
    for (const device of only ? candidates.filter((candidate) => only.includes(candidate.id)) : candidates) {
      await this.devices.move(orgId, device.id, { status: transition.to!, reason, clearOwner: false, setIssuedAt: false, now }, tx);
      await this.audit.record(
        {
          org: orgId,
          ...byActor(actor),
          action: `device.${action}`,
          target: device.id,
          outcome: 'success',
          details: { from: device.status, to: transition.to, reason, via: `wallet.${action}` },
        },
        tx,
      );
      await this.moves.moved({ orgId, deviceId: device.id, action, reason, actor }, tx);
      moved.push(device.id);
    }
    publishDeviceChanges(this.changes, tx, orgId, moved);
    return moved;
  }
}
