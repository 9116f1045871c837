export { AuthModule } from './auth.module';
export { type PersonTokenContext, type PlannedAccessToken, type TokenResponse, TokenService } from './tokens/token.service';
export { JwsService, type JwsType, type VerifyFailure } from './tokens/jws.service';
export { PurgeJob } from './tokens/purge.job';
export { ASSERTION_ALGORITHMS, AssertionVerifier, MAX_ASSERTION_BYTES, type Refusal, type UnverifiedAssertion } from './clients/assertion-verifier';
export { ALL_PERMISSIONS, ALL_SCOPES, Permission, Scope, SCOPE_PERMISSIONS } from './authorization/permissions';
export { isScope, type Role, RoleCatalog } from './authorization/role-catalog';
export { OperatorDependentPolicy } from './authorization/operator-dependent.policy';
export { type SecondStep, type SignInFactor, SignInFactorPolicy, type SignInSubject } from './grants/sign-in-factor.policy';
export { loadScopeAssignment, parseScopeAssignment, ScopeAssignmentError } from './authorization/scope-assignment.loader';
export { AccessGuard } from './authorization/access.guard';
export { AuthStoreModule } from './auth-store.module';
export { SigningKeysModule } from './signing-keys/signing-keys.module';
export { SigningKeys, type SigningKeyAlgorithm } from './signing-keys/signing-keys.service';
export { presentSigningKey, presentWithdrawal } from './signing-keys/signing-key.presenter';
export {
  type AuthenticationMethod,
  EXPIRED_SESSION_COOKIE,
  loginLocation,
  SESSION_COOKIE,
  type SignInSession,
  SignInSessions,
} from './sessions/sign-in-sessions';
export { OneTimeCodes, type OneTimeCodeSource } from './sign-in/one-time-codes';
export { type OfferedTotp, TotpEnrolment, type TotpEnrolmentSource } from './sign-in/enrolment/totp-enrolment';
export { type FactorRemoval, type OwnFactor, SignInFactors, type SignInFactorSource } from './account/sign-in-factors';
export { type NewPasskey, PasskeyCredentials, type PasskeySource, type StoredPasskey } from './sign-in/passkeys/passkey-credentials';
export { SignInSessionService, type SessionSummary } from './sessions/sign-in-session.service';
export type { SessionEndReason } from './sessions/sign-in-session.repository';
export { type SmartCardHolder, SmartCardLogons, type SmartCardLogonSource } from './sign-in/smart-card-logons';
export { ApprovalDevices, type ApprovalAsk, type ApprovalDeviceSource } from './backchannel/approval-devices';
export { BackchannelAuthentication, CIBA_GRANT, BINDING_MESSAGE_MAX, type PendingApproval } from './backchannel/backchannel-authentication.service';
export { PAGE_HEADERS, errorPageHtml } from './oidc/oidc-pages';
