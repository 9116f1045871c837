import { Module } from '@nestjs/common';
import { AppConfig } from '@app/config';
import { AdminAccessPolicy } from './admin/admin-access.policy';
import { AdminPresenter } from './admin/admin.presenter';
import { OrganizationsController } from './admin/organizations.controller';
import { SystemAccountsController } from './admin/system-accounts.controller';
import { AuditService } from './audit/audit.service';
import { BootstrapService } from './bootstrap.service';
import { OrganizationRepository } from './organizations/organization.repository';
import { OrganizationService } from './organizations/organization.service';
import { SecretHasher } from './system-accounts/secret-hasher';
import { SystemAccountRepository } from './system-accounts/system-account.repository';
import { SystemAccountService } from './system-accounts/system-account.service';

/** Organizations, system accounts and their credentials, the audit log, and the admin API over them. */
@Module({
  controllers: [OrganizationsController, SystemAccountsController],
  providers: [
    OrganizationRepository,
    OrganizationService,
    SystemAccountRepository,
    SystemAccountService,
    SecretHasher,
    AuditService,
    AdminAccessPolicy,
    BootstrapService,
    {
      provide: AdminPresenter,
      inject: [AppConfig, SystemAccountService],
      useFactory: (config: AppConfig, accounts: SystemAccountService) => new AdminPresenter(config.publicBaseUrl, (org) => accounts.tokenUrl(org)),
    },
  ],
  exports: [OrganizationService, SystemAccountService, SystemAccountRepository, SecretHasher, AuditService],
})
export class AccountsModule {}
