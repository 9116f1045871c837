export { AccountsModule } from './accounts.module';
export { DEFAULT_SETTINGS, type OrganizationSettings, organizationSettingsSchema, withDefaults } from './organizations/organization-settings';
export { type Organization, type OrganizationHoldings, OrganizationService, PLATFORM_ORG, toOrganization } from './organizations/organization.service';
export { SecretHasher } from './system-accounts/secret-hasher';
export {
  type ListedSystemAccountRow,
  type SecretMetadataRow,
  type StoredSecret,
  type SystemAccountChanges,
  SystemAccountRepository,
  type SystemAccountRow,
} from './system-accounts/system-account.repository';
export { type IssuedSecret, SystemAccountService } from './system-accounts/system-account.service';
export { parseCertificateUpload, type ParsedCertificate } from './system-accounts/certificate-parser';
export {
  type BackchannelSettings,
  backchannelSettingsOf,
  backchannelSettingsSchema,
  notificationEndpointAddressProblem,
  notificationEndpointPolicy,
  notificationEndpointProblem,
  type TokenDeliveryMode,
} from './system-accounts/backchannel-settings';
export type { CertificateRow, StoredCertificate } from './certificates/certificate-store';
export { AccessDeniedError, AdminAccessPolicy, ADMINISTERED_ORGANIZATION, AdministeredOrganization, type AdminRequest } from './admin/admin-access.policy';
export { AdminPresenter } from './admin/admin.presenter';
export { UserViews } from './admin/user-views';
export {
  addApplicationSchema,
  createAccountSchema,
  createOrganizationSchema,
  createSecretSchema,
  createUserSchema,
  DEFAULT_USER_ROLE,
  oidcClientSchema,
  patchAccountSchema,
  patchOrganizationSchema,
  patchUserSchema,
  setPasswordSchema,
} from './admin/admin.schemas';
export { type CertifiedApplication, CertifiedApplicationService } from './applications/certified-application.service';
export { MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH, PasswordHasher, PasswordHashSlots } from './users/password-hasher';
export {
  type LockedUser,
  type NewUser,
  platformAdministratorConflict,
  type TokenSubjectUser,
  type TokenSubjectWithSettings,
  type UserChanges,
  type UserEmail,
  type UserNameParts,
  type UserProfile,
  UserRepository,
  type UserRow,
  type UserSearchColumns,
  type UserType,
  type UserWithSettings,
} from './users/user.repository';
export { EMAIL_VALUES, SCIM_CORE_USER_SCHEMA, USER_SEARCH_DEFINITION } from './users/user-search';
export { type CreateUserInput, type UpdateUserInput, USER_NAME_PATTERN, UserService } from './users/user.service';
export {
  AccountDependents,
  type Holding,
  type LastSignInReader,
  type PasswordChangeListener,
  type SettingsChangeListener,
  type TokenSubject,
  type UserHolding,
  type UserWriteListener,
} from './account-dependents';
export { type GrantChange, GrantDenied, GrantPolicy, type GrantRule, type GrantTarget, type RoleFacts, type RoleLookup } from './grant.policy';
export { OidcClientService } from './oidc-clients/oidc-client.service';
export type { OidcClient, OidcClientRow, OidcClientSettings } from './oidc-clients/oidc-client.repository';
export { MAX_REDIRECT_URI_LENGTH, redirectUriProblem } from './oidc-clients/redirect-uri';
export {
  ADD_FACTOR_TICKET_LIFETIME_S,
  ENROLMENT_TOKEN_PATTERN,
  type EnrolmentLinkPurpose,
  type EnrolmentLinkRefusal,
  EnrolmentLinks,
  type EnrolmentLinkState,
  type IssuedEnrolmentLink,
} from './users/enrolment-links';
