/**
 * The permission catalogue (DECISIONS 5.2): one `resource.action` permission per entry point of the
 * credential-management API and the push-gateway configuration, and the fixed permission set of each
 * scope. Routes declare a permission with @RequirePermission(Permission.X); roles reach permissions
 * only through scopes (scopeAssignment.properties). This file is the contract the e2e permission
 * table and the route snapshot are checked against.
 */
export enum Permission {
  ContentRequestIssuanceCreate = 'contentRequest.issuance.create',
  ContentRequestRecycleCreate = 'contentRequest.recycle.create',
  ContentRequestUnlockPinCreate = 'contentRequest.unlockPin.create',
  ContentRequestValidate = 'contentRequest.validate',
  ContentRequestDelete = 'contentRequest.delete',
  ContentRequestUpdate = 'contentRequest.update',
  ContentRequestAction = 'contentRequest.action',
  ContentRequestSearch = 'contentRequest.search',
  CredentialRead = 'credential.read',
  CredentialPolicyRead = 'credentialPolicy.read',
  WalletPolicyRead = 'walletPolicy.read',
  DeviceCreate = 'device.create',
  DeviceActivate = 'device.activate',
  DeviceRead = 'device.read',
  DeviceSearch = 'device.search',
  DeviceDelete = 'device.delete',
  DeviceSuspend = 'device.suspend',
  DeviceResume = 'device.resume',
  DeviceRevoke = 'device.revoke',
  DeviceTerminate = 'device.terminate',
  DeviceFlowIssuance = 'deviceFlow.issuance',
  DeviceFlowApplicationsUpdate = 'deviceFlow.applicationsUpdate',
  DevicePolicyRead = 'devicePolicy.read',
  DevicePolicySearch = 'devicePolicy.search',
  GroupRead = 'group.read',
  UserRead = 'user.read',
  UserSearch = 'user.search',
  StatsRead = 'stats.read',
  UserEnrollmentDataWrite = 'user.enrollmentData.write',
  UserAuthenticatorRead = 'user.authenticator.read',
  UserAuthenticatorManage = 'user.authenticator.manage',
  PrinterRead = 'printer.read',
  OperatorCreate = 'operator.create',
  OperatorList = 'operator.list',
  OperatorDelete = 'operator.delete',
  WalletRead = 'wallet.read',
  WalletUpdate = 'wallet.update',
  WalletAction = 'wallet.action',
  WalletSearch = 'wallet.search',
  SyncSessionExecute = 'syncSession.execute',
  SelfRead = 'self.read',
  SelfDeviceRead = 'self.device.read',
  SelfDeviceAction = 'self.device.action',
  SelfWalletRead = 'self.wallet.read',
  SelfContentRequestCreate = 'self.contentRequest.create',
  SelfContentRequestSearch = 'self.contentRequest.search',
  SelfContentRequestAction = 'self.contentRequest.action',
  SelfSyncSessionExecute = 'self.syncSession.execute',
  SelfAuthenticatorRead = 'self.authenticator.read',
  SelfAuthenticatorManage = 'self.authenticator.manage',
  ReferenceDataRead = 'referenceData.read',
  OobAdapterConfigurationManage = 'oobAdapterConfiguration.manage',
}

/** Scope tokens as written in scopeAssignment.properties (interface, Authentication 12). */
export enum Scope {
  DeviceManagement = 'Scope.device_management',
  HelpDesk = 'Scope.helpdesk',
  ConfigurationOperator = 'Scope.configuration_operator',
  Device = 'Scope.device',
}

const P = Permission;

/** Read by Device Management, Help Desk and Configuration Operator alike. */
const USER_DIRECTORY = [P.GroupRead, P.UserRead, P.UserSearch, P.StatsRead, P.ReferenceDataRead];

/** What Device Management and Help Desk share: device care, requests other than issuance, wallets. */
const DEVICE_CARE = [
  P.ContentRequestRecycleCreate,
  P.ContentRequestUnlockPinCreate,
  P.ContentRequestDelete,
  P.ContentRequestUpdate,
  P.ContentRequestAction,
  P.ContentRequestSearch,
  P.CredentialRead,
  P.CredentialPolicyRead,
  P.WalletPolicyRead,
  P.DeviceRead,
  P.DeviceSearch,
  P.DeviceDelete,
  P.DeviceSuspend,
  P.DeviceResume,
  P.DeviceRevoke,
  P.DeviceFlowApplicationsUpdate,
  P.DevicePolicyRead,
  P.DevicePolicySearch,
  P.WalletRead,
  P.WalletUpdate,
  P.WalletAction,
  P.WalletSearch,
  P.UserAuthenticatorRead,
  P.UserAuthenticatorManage,
];

/** DECISIONS 5.2, column by column. */
export const SCOPE_PERMISSIONS: Readonly<Record<Scope, ReadonlySet<Permission>>> = {
  [Scope.DeviceManagement]: new Set([
    ...USER_DIRECTORY,
    ...DEVICE_CARE,
    P.ContentRequestIssuanceCreate,
    P.ContentRequestValidate,
    P.DeviceCreate,
    P.DeviceActivate,
    P.DeviceFlowIssuance,
    P.UserEnrollmentDataWrite,
    P.PrinterRead,
    P.SyncSessionExecute,
  ]),
  [Scope.HelpDesk]: new Set([...USER_DIRECTORY, ...DEVICE_CARE, P.DeviceTerminate]),
  [Scope.ConfigurationOperator]: new Set([...USER_DIRECTORY, P.OperatorCreate, P.OperatorList, P.OperatorDelete, P.OobAdapterConfigurationManage]),
  [Scope.Device]: new Set([
    P.SelfRead,
    P.SelfDeviceRead,
    P.SelfDeviceAction,
    P.SelfWalletRead,
    P.SelfContentRequestCreate,
    P.SelfContentRequestSearch,
    P.SelfContentRequestAction,
    P.SelfSyncSessionExecute,
    P.SelfAuthenticatorRead,
    P.SelfAuthenticatorManage,
  ]),
};

export const ALL_PERMISSIONS: readonly Permission[] = Object.values(Permission);
export const ALL_SCOPES: readonly Scope[] = Object.values(Scope);
