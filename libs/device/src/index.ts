export { DeviceModule, DeviceStoreModule } from './device.module';
export { DeviceService } from './device.service';
export {
  ATR_PATTERN,
  ATR_RULE,
  canonicalExternalId,
  CUID_PATTERN,
  CUID_RULE,
  DEVICE_MULTI_VALUED,
  DEVICE_RESOURCE_PATH,
  DEVICE_SCHEMA,
  DEVICE_SEARCH_DEFINITION,
  deviceActionSchema,
  type ExternalId,
  isDeviceId,
  MAX_EXTERNAL_IDS,
  parseActionBody,
  parseCreateDevice,
} from './device.schema';
export { DevicePresenter, type DeviceResource } from './device.presenter';
export {
  DEVICE_ACTIONS,
  DEVICE_LIFECYCLE,
  DEVICE_REASONS,
  DEVICE_STATUSES,
  type DeviceAction,
  type DeviceEvent,
  type DeviceReason,
  type DeviceStatus,
  type DeviceTransition,
  nextStatus,
  type ReasonCheck,
  type ReasonRule,
  resolveReason,
  transitionOf,
} from './lifecycle/device-lifecycle';
export { renderLifecycleMarkdown, withGeneratedLifecycle } from './lifecycle/lifecycle-markdown';
export { type ImportEntry, importFormat, MAX_IMPORT_ENTRIES, parseImport } from './import/device-import.parser';
export { DeviceImportService, type ImportLineReport, type ImportReport } from './import/device-import.service';
export { type OwnedDevice, OwnedDevices } from './owned-devices';
export { type CompletionMove, RequestedDevices, type TargetDevice } from './requested-devices';
export { type DeviceMove, type DeviceMoveListener, DeviceMoveListeners } from './device-move-listeners';
export { type CarriedCredential, type DeviceContent, DeviceContents, type DeviceContentSource, type DeviceView, NO_CONTENT } from './device-contents';
export type { DeviceRow } from './device.repository';
