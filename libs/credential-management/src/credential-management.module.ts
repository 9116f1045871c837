import { Module, Provider } from '@nestjs/common';
import { AccountDependents, AccountsModule } from '@app/accounts';
import { AuthModule, AuthStoreModule, OneTimeCodes, PasskeyCredentials, SignInFactors, SmartCardLogons, TotpEnrolment } from '@app/auth';
import { DeliveryGatewayStoreModule } from '@app/delivery-gateway';
import { DeviceContents, DeviceModule, DeviceStoreModule } from '@app/device';
import { Clock, DataCipher } from '@app/common';
import { AppConfig } from '@app/config';
import { PkiModule } from '@app/pki';
import { ContentRequestPresenter } from './content-requests/content-request.presenter';
import { ContentRequestRepository } from './content-requests/content-request.repository';
import { CardAdminKeys } from './content-requests/card-admin-keys';
import { ContentRequestService } from './content-requests/content-request.service';
import { ContentRequestSweepJob } from './content-requests/content-request-sweep.job';
import { ContentRequestsController } from './content-requests/content-requests.controller';
import { CredentialFollower } from './credentials/credential-follower';
import { OneTimeCodeCredentials } from './credentials/one-time-code-credentials';
import { SelfEnrolledTotp } from './credentials/self-enrolled-totp';
import { OwnFactorCredentials } from './credentials/own-factor-credentials';
import { SelfEnrolledPasskeys } from './credentials/self-enrolled-passkeys';
import { FactorResetController } from './credentials/factor-reset.controller';
import { FactorResetService } from './credentials/factor-reset.service';
import { SmartCardLogonCredentials } from './credentials/smart-card-logon-credentials';
import { CredentialNotifications } from './notifications/credential-notifications';
import { DeviceFlowPresenter } from './device-flows/device-flow.presenter';
import { DeviceFlowRepository } from './device-flows/device-flow.repository';
import { DeviceFlowService } from './device-flows/device-flow.service';
import { DeviceFlowsController } from './device-flows/device-flows.controller';
import { CredentialPresenter } from './credentials/credential.presenter';
import { CredentialRepository } from './credentials/credential.repository';
import { CredentialsController } from './credentials/credentials.controller';
import { SyncSessionPresenter } from './sync-sessions/sync-session.presenter';
import { SyncSessionRepository } from './sync-sessions/sync-session.repository';
import { SyncSessionService } from './sync-sessions/sync-session.service';
import { SyncSessionsController } from './sync-sessions/sync-sessions.controller';
import { DiscoveryDocuments, ResourceTypesController, SchemasController, ServiceProviderConfigController } from './discovery/discovery.controller';
import { DevicePolicyAdminController, DevicePolicyController } from './device-policies/device-policies.controller';
import { DevicePolicyPresenter } from './device-policies/device-policy.presenter';
import { DevicePolicyRepository } from './device-policies/device-policy.repository';
import { DevicePolicyService } from './device-policies/device-policy.service';
import { GroupPresenter } from './groups/group.presenter';
import { GroupRepository } from './groups/group.repository';
import { GroupService } from './groups/group.service';
import { GroupAdminController, GroupsController } from './groups/groups.controller';
import { CredentialPolicyController, PolicyAdminController, WalletPolicyController } from './policies/policies.controller';
import { PolicyPresenter } from './policies/policy.presenter';
import { PolicyRepository } from './policies/policy.repository';
import { PolicyService } from './policies/policy.service';
import { PrinterPresenter } from './printers/printer.presenter';
import { PrinterRepository } from './printers/printer.repository';
import { PrinterService } from './printers/printer.service';
import { PrinterAdminController, PrinterController } from './printers/printers.controller';
import { ScimUserService } from './users/scim-user.service';
import { UserPresenter } from './users/user.presenter';
import { UserLinksRepository } from './users/user-links.repository';
import { UsersController } from './users/users.controller';
import { WalletRepository } from './wallets/wallet.repository';
import { WalletPresenter } from './wallets/wallet.presenter';
import { WalletService } from './wallets/wallet.service';
import { WalletsController } from './wallets/wallets.controller';
import { SelfController } from './self/self.controller';
import { SelfService } from './self/self.service';
import { StatsController } from './stats/stats.controller';
import { StatsService } from './stats/stats.service';
import { EnrollmentDataController } from './enrollment/enrollment-data.controller';
import { EnrollmentDataService } from './enrollment/enrollment-data.service';
import { EnrollmentDataRepository } from './enrollment/enrollment-data.repository';

/** Presenters build locations from PUBLIC_BASE_URL. */
const presenter = (type: new (baseUrl: string) => object): Provider => ({
  provide: type,
  inject: [AppConfig],
  useFactory: (config: AppConfig) => new type(config.publicBaseUrl),
});

/**
 * The reference data's services and presenters, and the repositories they and the command line ask
 * (open requests of a policy, live credentials of a device): the admin API and the command line share them.
 */
const REFERENCE_DATA_SERVICES = [
  GroupService,
  ContentRequestRepository,
  CredentialRepository,
  DevicePolicyRepository,
  DevicePolicyService,
  PolicyRepository,
  PolicyService,
  PrinterRepository,
  PrinterService,
];
const REFERENCE_DATA_PRESENTERS = [GroupPresenter, DevicePolicyPresenter, PolicyPresenter, PrinterPresenter];

/**
 * Credential management without HTTP: what the service and the command line both load, so that every
 * user, however created, gets its wallet and the rows of its group names in the transaction that
 * writes it (AccountDependents), and so that the command line manages the reference data with the
 * API's own services.
 */
@Module({
  imports: [AccountsModule],
  providers: [WalletRepository, GroupRepository, ...REFERENCE_DATA_SERVICES, ...REFERENCE_DATA_PRESENTERS.map(presenter)],
  exports: [WalletRepository, GroupRepository, ...REFERENCE_DATA_SERVICES, ...REFERENCE_DATA_PRESENTERS],
})
export class CredentialManagementStoreModule {
  constructor(dependents: AccountDependents, wallets: WalletRepository, groups: GroupRepository, clock: Clock) {
    dependents.registerUserWriteListener(async (user, change, _actor, tx) => {
      if (change === 'created') await wallets.createFor(user.org_id, user.id, clock.now(), tx);
      await groups.ensure(user.org_id, user.groups, clock.now(), tx);
    });
  }
}

/**
 * What keeps credentials with their devices and with their certificates (CredentialFollower), and
 * tells their owners (CredentialNotifications): loaded by the service, and by the command line's
 * `ca revoke-generation`, whose revocation carries the credentials and sessions as the service's does.
 */
@Module({
  imports: [CredentialManagementStoreModule, AuthStoreModule, DeviceStoreModule, PkiModule, DeliveryGatewayStoreModule],
  providers: [CredentialFollower, CredentialNotifications],
  exports: [CredentialNotifications],
})
export class CredentialFollowerModule {}

/**
 * The credential-management API (CREDENTIAL-MANAGEMENT.md): Users with their EnrollmentData, Groups,
 * DevicePolicy, the global policies, Printer, Wallet, ContentRequest, Stats, Self and SCIM discovery, with the admin
 * API of the reference data this library owns.
 */
@Module({
  imports: [
    CredentialManagementStoreModule,
    CredentialFollowerModule,
    AccountsModule,
    AuthModule,
    DeviceStoreModule,
    DeviceModule,
    PkiModule,
    DeliveryGatewayStoreModule,
  ],
  controllers: [
    UsersController,
    EnrollmentDataController,
    WalletsController,
    ContentRequestsController,
    SyncSessionsController,
    DeviceFlowsController,
    CredentialsController,
    FactorResetController,
    SelfController,
    StatsController,
    GroupsController,
    GroupAdminController,
    DevicePolicyController,
    DevicePolicyAdminController,
    CredentialPolicyController,
    WalletPolicyController,
    PolicyAdminController,
    PrinterController,
    PrinterAdminController,
    ServiceProviderConfigController,
    ResourceTypesController,
    SchemasController,
  ],
  providers: [
    ScimUserService,
    UserLinksRepository,
    EnrollmentDataRepository,
    EnrollmentDataService,
    WalletService,
    ContentRequestService,
    CardAdminKeys,
    ContentRequestSweepJob,
    OneTimeCodeCredentials,
    SelfEnrolledTotp,
    OwnFactorCredentials,
    SelfEnrolledPasskeys,
    FactorResetService,
    SmartCardLogonCredentials,
    SyncSessionRepository,
    SyncSessionService,
    DeviceFlowRepository,
    DeviceFlowService,
    // OATH secrets are sealed under DATA_ENCRYPTION_KEYS, as connection strings are (DECISIONS 10).
    { provide: DataCipher, inject: [AppConfig], useFactory: (config: AppConfig) => new DataCipher(config.dataEncryptionKeys) },
    SelfService,
    StatsService,
    DiscoveryDocuments,
    presenter(WalletPresenter),
    presenter(ContentRequestPresenter),
    presenter(CredentialPresenter),
    presenter(SyncSessionPresenter),
    presenter(DeviceFlowPresenter),
    presenter(UserPresenter),
  ],
})
export class CredentialManagementModule {
  constructor(
    contents: DeviceContents,
    credentials: CredentialRepository,
    codes: OneTimeCodes,
    oathCredentials: OneTimeCodeCredentials,
    smartCards: SmartCardLogons,
    logonCertificates: SmartCardLogonCredentials,
    totpEnrolment: TotpEnrolment,
    selfEnrolledTotp: SelfEnrolledTotp,
    passkeys: PasskeyCredentials,
    selfEnrolledPasskeys: SelfEnrolledPasskeys,
    factors: SignInFactors,
    ownFactors: OwnFactorCredentials,
  ) {
    // A device shows its credentials and its policy (CREDENTIAL-MANAGEMENT.md "Resources", Device row); this library holds them.
    contents.register((orgId, deviceIds) => credentials.onDevices(orgId, deviceIds));
    // The hosted login page's one-time codes are the OATH TOTP credentials this library issues (DECISIONS 14.1).
    codes.register(oathCredentials);
    // And its smart cards are the certificate credentials this library issues into wallets.
    smartCards.register(logonCertificates);
    // A person's own authenticator app, enrolled through their enrolment link, is an OATH TOTP credential of this library (DECISIONS 14.4).
    totpEnrolment.register(selfEnrolledTotp);
    // And their passkeys are FIDO2 credentials of this library (DECISIONS 14.5).
    passkeys.register(selfEnrolledPasskeys);
    // The person's own second factors on their Security page (TOTP and passkeys) are credentials of this library (DECISIONS 14.6).
    factors.register(ownFactors);
  }
}
