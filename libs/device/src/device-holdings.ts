import { Injectable } from '@nestjs/common';
import { AccountDependents } from '@app/accounts';
import { AuditLog } from '@app/audit';
import { Actor, Clock } from '@app/common';
import { ChangeFeed, Transaction } from '@app/persistence';
import { publishDeviceChanges } from './device-changes';
import { DeviceRepository } from './device.repository';
import { DeviceMoveListeners } from './device-move-listeners';
import { transitionOf } from './lifecycle/device-lifecycle';

/**
 * The devices a user holds, as accounts asks before deleting the user (CREDENTIAL-MANAGEMENT.md
 * "Users"): a device that is not TERMINATED blocks the delete; `?force=true` first terminates each
 * one (the lifecycle's `terminate`: unassigned, credentials revoked), or unbinds one still ASSIGNED to
 * an open request, audited per device like the Device entry points.
 */
@Injectable()
export class DeviceHoldings {
  constructor(
    private readonly devices: DeviceRepository,
    private readonly audit: AuditLog,
    private readonly clock: Clock,
    private readonly moves: DeviceMoveListeners,
    private readonly changes: ChangeFeed,
  ) {}

  register(dependents: AccountDependents): void {
    dependents.registerUserHolding({
      describe: (orgId, userId, tx) => this.describe(orgId, userId, tx),
      release: (orgId, userId, actor, tx) => this.release(orgId, userId, actor, tx),
    });
  }

  private async describe(orgId: string, userId: string, tx: Transaction): Promise<string | undefined> {
    const held = await this.devices.lockHeldBy(orgId, userId, tx);
    if (held.length === 0) return undefined;
    const listed = held.slice(0, 10).map((d) => `${d.id} (${d.status})`);
    const more = held.length > listed.length ? ` and ${held.length - listed.length} more` : '';
    return `${held.length === 1 ? 'device' : `${held.length} devices`} ${listed.join(', ')}${more}`;
  }

  private async release(orgId: string, userId: string, actor: Actor, tx: Transaction): Promise<void> {
    const now = this.clock.now();
    const terminate = transitionOf('terminate');
    const unbind = transitionOf('unbind');
    for (const device of await this.devices.lockHeldBy(orgId, userId, tx)) {
      const move = terminate.from.includes(device.status) ? terminate : unbind;
      const reason = move.reason.default;
      const moved = await this.devices.move(orgId, device.id, { status: move.to!, reason, clearOwner: true, setIssuedAt: false, now }, tx);
      publishDeviceChanges(this.changes, tx, orgId, [device.id]);
      if (move === terminate) await this.moves.moved({ orgId, deviceId: device.id, action: 'terminate', reason, actor }, tx);
      await this.audit.record(
        {
          org: orgId,
          actor: actor.name,
          action: move === terminate ? 'device.terminate' : 'device.update',
          target: device.id,
          outcome: 'success',
          sourceAddress: actor.sourceAddress,
          correlationId: actor.correlationId,
          details: { from: device.status, to: moved.status, reason, previousOwner: userId, via: 'user.delete' },
        },
        tx,
      );
    }
  }
}
