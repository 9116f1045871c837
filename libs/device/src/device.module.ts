import { Module } from '@nestjs/common';
import { AccountDependents, AccountsModule } from '@app/accounts';
import { AuthModule } from '@app/auth';
import { AppConfig } from '@app/config';
import { DevicePresenter } from './device.presenter';
import { DeviceRepository } from './device.repository';
import { DeviceService } from './device.service';
import { DeviceImportController } from './http/device-import.controller';
import { DeviceController } from './http/device.controller';
import { DeviceImportService } from './import/device-import.service';
import { DeviceHoldings } from './device-holdings';
import { OwnedDevices } from './owned-devices';
import { RequestedDevices } from './requested-devices';
import { DeviceMoveListeners } from './device-move-listeners';
import { DeviceContents } from './device-contents';

/**
 * Device storage and the bulk import, without HTTP or the token service: what the command line
 * (`device import`) needs.
 */
@Module({
  imports: [AccountsModule],
  providers: [DeviceRepository, DeviceImportService, DeviceHoldings, OwnedDevices, RequestedDevices, DeviceMoveListeners, DeviceContents],
  exports: [DeviceRepository, DeviceImportService, OwnedDevices, RequestedDevices, DeviceMoveListeners, DeviceContents],
})
export class DeviceStoreModule {
  constructor(dependents: AccountDependents, devices: DeviceRepository, holdings: DeviceHoldings) {
    // A user who holds devices is deleted only with force, which terminates them first.
    holdings.register(dependents);
    // An organization's devices block its deletion without force; they go with it (ON DELETE CASCADE).
    dependents.registerHolding({ key: 'devices', singular: 'device', plural: 'devices', count: (orgId, tx) => devices.countInOrg(orgId, tx) });
  }
}

/** The Device resource, its lifecycle and the admin import endpoint (DECISIONS 8 and 11). */
@Module({
  imports: [DeviceStoreModule, AccountsModule, AuthModule],
  controllers: [DeviceController, DeviceImportController],
  providers: [DeviceService, { provide: DevicePresenter, inject: [AppConfig], useFactory: (config: AppConfig) => new DevicePresenter(config.publicBaseUrl) }],
  exports: [DeviceService, DevicePresenter],
})
export class DeviceModule {}
