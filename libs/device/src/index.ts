export * from './device.module';
export * from './device.service';
export * from './device.schema';
export * from './device.presenter';
export * from './lifecycle/device-lifecycle';
export * from './lifecycle/lifecycle-markdown';
export * from './import/device-import.parser';
export * from './import/device-import.service';
