export { CredentialFollowerModule, CredentialManagementModule, CredentialManagementStoreModule } from './credential-management.module';
export {
  CMS_USER_SCHEMA,
  ENTERPRISE_USER_SCHEMA,
  parseUserBody,
  USER_PERMISSION_SCHEMA,
  USER_SCHEMAS,
  type UserBody,
  userBodySchema,
  type UserFields,
  userFields,
  writableUser,
} from './users/user.schema';
export { type GroupMember, GroupService, type GroupView } from './groups/group.service';
export { GroupPresenter } from './groups/group.presenter';
export { CMS_GROUP_SCHEMA, createGroupSchema, GROUP_SEARCH_DEFINITION, patchGroupSchema, SCIM_CORE_GROUP_SCHEMA } from './groups/group.schema';
export { DevicePolicyService } from './device-policies/device-policy.service';
export { DevicePolicyPresenter } from './device-policies/device-policy.presenter';
export {
  createDevicePolicySchema,
  CREDENTIAL_TYPES,
  type CredentialType,
  DEVICE_POLICY_SCHEMA,
  DEVICE_POLICY_SEARCH_DEFINITION,
  type DevicePolicyChanges,
  type NewDevicePolicy,
  patchDevicePolicySchema,
} from './device-policies/device-policy.schema';
export { PrinterService } from './printers/printer.service';
export { PrinterPresenter } from './printers/printer.presenter';
export {
  createPrinterSchema,
  type NewPrinter,
  patchPrinterSchema,
  PRINTER_SCHEMA,
  PRINTER_SEARCH_DEFINITION,
  PRINTER_STATUSES,
  type PrinterChanges,
} from './printers/printer.schema';
export { PolicyService, type PolicyView } from './policies/policy.service';
export { PolicyPresenter } from './policies/policy.presenter';
export {
  type CredentialPolicy,
  credentialPolicySchema,
  KEY_ALGORITHMS,
  type KeyAlgorithm,
  POLICY_DEFAULTS,
  POLICY_KINDS,
  POLICY_RESOURCES,
  POLICY_SCHEMAS,
  type PolicyKind,
  type WalletPolicy,
  walletPolicySchema,
} from './policies/policy.schema';
export { ContentRequestSweepJob } from './content-requests/content-request-sweep.job';
export { OfflineCredentialGuardModule } from './credentials/offline-credential-guard';
