import { Permission } from '@app/auth';

/**
 * DECISIONS 5.2 transcribed by hand, independently of the catalogue in libs/auth: which scopes grant
 * each permission. The authorization e2e test holds the service to this table (the contract).
 */
type ScopeColumn = 'DM' | 'HD' | 'CO' | 'DV';
const P = Permission;

export const PERMISSION_TABLE: Record<Permission, ScopeColumn[]> = {
  [P.ContentRequestIssuanceCreate]: ['DM'],
  [P.ContentRequestRecycleCreate]: ['DM', 'HD'],
  [P.ContentRequestUnlockPinCreate]: ['DM', 'HD'],
  [P.ContentRequestValidate]: ['DM'],
  [P.ContentRequestDelete]: ['DM', 'HD'],
  [P.ContentRequestUpdate]: ['DM', 'HD'],
  [P.ContentRequestAction]: ['DM', 'HD'],
  [P.ContentRequestSearch]: ['DM', 'HD'],
  [P.CredentialRead]: ['DM', 'HD'],
  [P.CredentialPolicyRead]: ['DM', 'HD'],
  [P.WalletPolicyRead]: ['DM', 'HD'],
  [P.DeviceCreate]: ['DM'],
  [P.DeviceActivate]: ['DM'],
  [P.DeviceRead]: ['DM', 'HD'],
  [P.DeviceSearch]: ['DM', 'HD'],
  [P.DeviceDelete]: ['DM', 'HD'],
  [P.DeviceSuspend]: ['DM', 'HD'],
  [P.DeviceResume]: ['DM', 'HD'],
  [P.DeviceRevoke]: ['DM', 'HD'],
  [P.DeviceTerminate]: ['HD'],
  [P.DeviceFlowIssuance]: ['DM'],
  [P.DeviceFlowApplicationsUpdate]: ['DM', 'HD'],
  [P.DevicePolicyRead]: ['DM', 'HD'],
  [P.DevicePolicySearch]: ['DM', 'HD'],
  [P.GroupRead]: ['DM', 'HD', 'CO'],
  [P.UserRead]: ['DM', 'HD', 'CO'],
  [P.UserSearch]: ['DM', 'HD', 'CO'],
  [P.StatsRead]: ['DM', 'HD', 'CO'],
  [P.UserEnrollmentDataWrite]: ['DM'],
  [P.UserAuthenticatorRead]: ['DM', 'HD'],
  [P.UserAuthenticatorManage]: ['DM', 'HD'],
  [P.PrinterRead]: ['DM'],
  [P.OperatorCreate]: ['CO'],
  [P.OperatorList]: ['CO'],
  [P.OperatorDelete]: ['CO'],
  [P.WalletRead]: ['DM', 'HD'],
  [P.WalletUpdate]: ['DM', 'HD'],
  [P.WalletAction]: ['DM', 'HD'],
  [P.WalletSearch]: ['DM', 'HD'],
  // CREDENTIAL-MANAGEMENT.md: SyncSession is held by DM, and by DV for the caller's own requests.
  [P.SyncSessionExecute]: ['DM'],
  [P.SelfRead]: ['DV'],
  [P.SelfDeviceRead]: ['DV'],
  [P.SelfDeviceAction]: ['DV'],
  [P.SelfWalletRead]: ['DV'],
  [P.SelfContentRequestCreate]: ['DV'],
  [P.SelfContentRequestSearch]: ['DV'],
  [P.SelfContentRequestAction]: ['DV'],
  [P.SelfSyncSessionExecute]: ['DV'],
  [P.SelfAuthenticatorRead]: ['DV'],
  [P.SelfAuthenticatorManage]: ['DV'],
  [P.ReferenceDataRead]: ['DM', 'HD', 'CO'],
  [P.OobAdapterConfigurationManage]: ['CO'],
};

const SCOPE_TOKENS: Record<ScopeColumn, string> = {
  DM: 'Scope.device_management',
  HD: 'Scope.helpdesk',
  CO: 'Scope.configuration_operator',
  DV: 'Scope.device',
};

/** The permissions a list of scope tokens grants, by the table. */
export function expectedPermissions(scopeTokens: string[]): Set<Permission> {
  return new Set(
    (Object.entries(PERMISSION_TABLE) as [Permission, ScopeColumn[]][])
      .filter(([, columns]) => columns.some((c) => scopeTokens.includes(SCOPE_TOKENS[c])))
      .map(([permission]) => permission),
  );
}
