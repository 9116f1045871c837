import { Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { AccountsModule, GrantPolicy } from '@app/accounts';
import { AuthStoreModule } from './auth-store.module';
import { DataCipher, RequestInputGuard } from '@app/common';
import { AppConfig } from '@app/config';
import { ApplicationHeadersGuard } from './authorization/application-headers.guard';
import { OperatorDependentPolicy } from './authorization/operator-dependent.policy';
import { AccessGuard } from './authorization/access.guard';
import { RoleCatalog } from './authorization/role-catalog';
import { RolesController } from './authorization/roles.controller';
import { loadScopeAssignment } from './authorization/scope-assignment.loader';
import { ApprovalDevices } from './backchannel/approval-devices';
import { BackchannelAuthentication } from './backchannel/backchannel-authentication.service';
import { BackchannelPing } from './backchannel/backchannel-ping';
import { BackchannelRequestRepository } from './backchannel/backchannel-request.repository';
import { AssertionVerifier } from './clients/assertion-verifier';
import { ClientAuthenticator } from './clients/client-authenticator.service';
import { ClientCredentialRepository } from './clients/client-credential.repository';
import { ClientCredentialCache } from './clients/client-credential.cache';
import { SignInFactorPolicy } from './grants/sign-in-factor.policy';
import { UserAuthenticator } from './grants/user-authenticator.service';
import { BearerGuard } from './http/bearer.guard';
import { PortalWhoamiController } from './http/portal-whoami.controller';
import { OwnSecurityController } from './account/own-security.controller';
import { OwnSecurityService } from './account/own-security.service';
import { SignInFactors } from './account/sign-in-factors';
import { DiscoveryController } from './http/discovery.controller';
import { SigningKeysController } from './http/signing-keys.controller';
import { TokenController } from './http/token.controller';
import { AuthorizeController } from './http/authorize.controller';
import { AuthorizationService } from './oidc/authorization.service';
import { CodeGrantService } from './oidc/code-grant.service';
import { LogoutService } from './oidc/logout.service';
import { OidcClientCache } from './oidc/oidc-client.cache';
import { SigningKeysModule } from './signing-keys/signing-keys.module';
import { AccessTokenValidator } from './tokens/access-token-validator';
import { JwsService } from './tokens/jws.service';
import { PurgeJob } from './tokens/purge.job';
import { TokenIntrospection } from './tokens/token-introspection.service';
import { TokenRepository } from './tokens/token.repository';
import { TokenStateCache } from './tokens/token-state.cache';
import { TokenService } from './tokens/token.service';
import { LoginController } from './sign-in/login.controller';
import { UserSessionsController } from './sessions/user-sessions.controller';
import { LoginFormProtection } from './sign-in/login-form-protection';
import { LoginService } from './sign-in/login.service';
import { OneTimeCodes } from './sign-in/one-time-codes';
import { SessionAuthentication } from './sessions/session-authentication';
import { SmartCardLogons } from './sign-in/smart-card-logons';
import { EnrolmentController } from './sign-in/enrolment/enrolment.controller';
import { EnrolmentService } from './sign-in/enrolment/enrolment.service';
import { TotpEnrolment } from './sign-in/enrolment/totp-enrolment';
import { PasskeyCredentials } from './sign-in/passkeys/passkey-credentials';
import { FactorStepPages } from './sign-in/enrolment/factor-step-pages';
import { PasskeyCeremonies } from './sign-in/passkeys/passkey-ceremonies';
import { PasskeyScriptsController } from './sign-in/passkeys/passkey-scripts.controller';

/** The token service, client authentication, the global bearer guard, and the hosted login page with people's sessions. */
@Module({
  imports: [AccountsModule, AuthStoreModule, SigningKeysModule],
  controllers: [
    TokenController,
    DiscoveryController,
    PortalWhoamiController,
    OwnSecurityController,
    RolesController,
    SigningKeysController,
    LoginController,
    EnrolmentController,
    PasskeyScriptsController,
    UserSessionsController,
    AuthorizeController,
  ],
  providers: [
    AssertionVerifier,
    ClientAuthenticator,
    ClientCredentialRepository,
    ClientCredentialCache,
    UserAuthenticator,
    SignInFactorPolicy,
    AccessTokenValidator,
    JwsService,
    PurgeJob,
    TokenIntrospection,
    TokenRepository,
    TokenStateCache,
    TokenService,
    OperatorDependentPolicy,
    LoginService,
    LoginFormProtection,
    OneTimeCodes,
    TotpEnrolment,
    SignInFactors,
    OwnSecurityService,
    PasskeyCredentials,
    PasskeyCeremonies,
    FactorStepPages,
    EnrolmentService,
    SessionAuthentication,
    SmartCardLogons,
    AuthorizationService,
    CodeGrantService,
    LogoutService,
    OidcClientCache,
    ApprovalDevices,
    BackchannelAuthentication,
    BackchannelPing,
    BackchannelRequestRepository,
    // Seals what a ping-mode CIBA request keeps until the person decides (DECISIONS 16).
    { provide: DataCipher, inject: [AppConfig], useFactory: (config: AppConfig) => new DataCipher(config.dataEncryptionKeys) },
    {
      provide: RoleCatalog,
      inject: [AppConfig],
      // Read once at boot; a malformed file refuses the start (DECISIONS 5.1).
      useFactory: (config: AppConfig) => loadScopeAssignment(config.scopeAssignmentFile),
    },
    // Global guards run in this order: who is calling, which application, may it do this.
    { provide: APP_GUARD, useClass: BearerGuard },
    // Path, query and body values that cannot be right stop here, before any rule reads the database.
    { provide: APP_GUARD, useClass: RequestInputGuard },
    { provide: APP_GUARD, useClass: ApplicationHeadersGuard },
    { provide: APP_GUARD, useClass: AccessGuard },
  ],
  exports: [
    TokenService,
    JwsService,
    PurgeJob,
    RoleCatalog,
    OperatorDependentPolicy,
    SignInFactorPolicy,
    OneTimeCodes,
    TotpEnrolment,
    SignInFactors,
    PasskeyCredentials,
    SmartCardLogons,
    ApprovalDevices,
    BackchannelAuthentication,
    AuthStoreModule,
  ],
})
export class AuthModule {
  constructor(grants: GrantPolicy, roles: RoleCatalog) {
    // What a caller may grant is compared against the mapping loaded here (DECISIONS 5.3).
    grants.useRoles((name) => roles.find(name));
  }
}
