import { Module } from '@nestjs/common';
import { AppConfig } from '@app/config';
import { AccountDependents } from './account-dependents';
import { AdminAccessPolicy } from './admin/admin-access.policy';
import { ApplicationsController } from './admin/applications.controller';
import { CertifiedApplicationService } from './applications/certified-application.service';
import { AdminPresenter } from './admin/admin.presenter';
import { UserViews } from './admin/user-views';
import { OrganizationsController } from './admin/organizations.controller';
import { SystemAccountsController } from './admin/system-accounts.controller';
import { UsersController } from './admin/users.controller';
import { OidcClientsController } from './admin/oidc-clients.controller';
import { OidcClientRepository } from './oidc-clients/oidc-client.repository';
import { OidcClientService } from './oidc-clients/oidc-client.service';
import { BootstrapService } from './bootstrap.service';
import { GrantPolicy } from './grant.policy';
import { OrganizationRepository } from './organizations/organization.repository';
import { OrganizationService } from './organizations/organization.service';
import { SecretHasher } from './system-accounts/secret-hasher';
import { SystemAccountRepository } from './system-accounts/system-account.repository';
import { SystemAccountService } from './system-accounts/system-account.service';
import { PasswordHashSlots, PasswordHasher } from './users/password-hasher';
import { UserRepository } from './users/user.repository';
import { UserService } from './users/user.service';
import { EnrolmentLinkRepository } from './users/enrolment-link.repository';
import { EnrolmentLinks } from './users/enrolment-links';

/** Organizations, system accounts and users with their credentials, and the admin API over them. */
@Module({
  controllers: [OrganizationsController, SystemAccountsController, ApplicationsController, UsersController, OidcClientsController],
  providers: [
    AccountDependents,
    OrganizationRepository,
    OrganizationService,
    SystemAccountRepository,
    SystemAccountService,
    SecretHasher,
    UserRepository,
    UserService,
    EnrolmentLinkRepository,
    EnrolmentLinks,
    PasswordHasher,
    PasswordHashSlots,
    AdminAccessPolicy,
    GrantPolicy,
    BootstrapService,
    CertifiedApplicationService,
    OidcClientRepository,
    OidcClientService,
    {
      provide: AdminPresenter,
      inject: [AppConfig, SystemAccountService],
      useFactory: (config: AppConfig, accounts: SystemAccountService) => new AdminPresenter(config.publicBaseUrl, (org) => accounts.tokenUrl(org)),
    },
    UserViews,
  ],
  exports: [
    AccountDependents,
    EnrolmentLinks,
    OrganizationService,
    SystemAccountService,
    SystemAccountRepository,
    SecretHasher,
    AdminAccessPolicy,
    GrantPolicy,
    AdminPresenter,
    UserViews,
    CertifiedApplicationService,
    UserService,
    UserRepository,
    PasswordHasher,
    PasswordHashSlots,
    OidcClientService,
  ],
})
export class AccountsModule {}
