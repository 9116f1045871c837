import { Module } from '@nestjs/common';
import { DomainError } from '@app/common';
import { DeviceMoveListeners, DeviceStoreModule } from '@app/device';
import { CredentialManagementStoreModule } from '../credential-management.module';
import { CredentialRepository } from './credential.repository';

/**
 * For the command line, which loads no HSM and so cannot revoke certificates: a device move that
 * would have to carry live credentials (the service's CredentialFollower does) is refused, with the
 * API call that does it, instead of leaving credentials ISSUED on a terminated device.
 */
@Module({ imports: [CredentialManagementStoreModule, DeviceStoreModule] })
export class OfflineCredentialGuardModule {
  constructor(listeners: DeviceMoveListeners, credentials: CredentialRepository) {
    listeners.register(async (move, tx) => {
      const live = await credentials.lockOfDevice(move.orgId, move.deviceId, ['ISSUED', 'ON_HOLD'], tx);
      if (live.length === 0) return;
      throw new DomainError(
        'CONFLICT',
        `Device ${move.deviceId} holds ${live.length} live credential${live.length === 1 ? '' : 's'}, whose certificates only the service can revoke ` +
          '(the command line has no HSM); do this through the API, e.g. DELETE /aims/rs/scim/v2/Users/{id}?force=true.',
      );
    });
  }
}
