import { Injectable } from '@nestjs/common';
import { Actor } from '@app/common';
import { Transaction } from '@app/persistence';
import { DeviceReason } from './lifecycle/device-lifecycle';

/** A move of a device by one of its entry points (or a wallet's, or a user's deletion), as listeners learn of it. */
export interface DeviceMove {
  orgId: string;
  deviceId: string;
  action: 'activate' | 'suspend' | 'resume' | 'revoke' | 'terminate';
  /** The device's status.reason after the move (LOST, STOLEN, ...). */
  reason: DeviceReason;
  actor: Actor;
}

export type DeviceMoveListener = (move: DeviceMove, tx: Transaction) => Promise<void>;

/**
 * What else moves with a device, registered by the libraries that hold it (credential management:
 * a device's credentials follow it, DECISIONS 8), called in the transaction of the move so that both
 * commit or neither does. The device library knows nothing of what listens.
 */
@Injectable()
export class DeviceMoveListeners {
  private readonly listeners: DeviceMoveListener[] = [];

  register(listener: DeviceMoveListener): void {
    this.listeners.push(listener);
  }

  async moved(move: DeviceMove, tx: Transaction): Promise<void> {
    for (const listener of this.listeners) await listener(move, tx);
  }
}
