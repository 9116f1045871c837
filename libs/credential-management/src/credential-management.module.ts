import { Module } from '@nestjs/common';
import { AccountDependents, AccountsModule } from '@app/accounts';
import { AuthModule } from '@app/auth';
import { Clock } from '@app/common';
import { AppConfig } from '@app/config';
import { DiscoveryDocuments, ResourceTypesController, SchemasController, ServiceProviderConfigController } from './discovery/discovery.controller';
import { GroupRepository } from './groups/group.repository';
import { ScimUserService } from './users/scim-user.service';
import { UserPresenter } from './users/user.presenter';
import { UsersController } from './users/users.controller';
import { WalletRepository } from './wallets/wallet.repository';

/**
 * The tables of credential management without HTTP: what the service and the command line both load,
 * so that every user, however created, gets its wallet and the rows of its group names in the
 * transaction that writes it (AccountDependents).
 */
@Module({
  imports: [AccountsModule],
  providers: [WalletRepository, GroupRepository],
  exports: [WalletRepository, GroupRepository],
})
export class CredentialManagementStoreModule {
  constructor(dependents: AccountDependents, wallets: WalletRepository, groups: GroupRepository, clock: Clock) {
    dependents.registerUserWriteListener(async (user, change, tx) => {
      if (change === 'created') await wallets.createFor(user.org_id, user.id, clock.now(), tx);
      await groups.ensure(user.org_id, user.groups, clock.now(), tx);
    });
  }
}

/** The credential-management API (CREDENTIAL-MANAGEMENT.md): Users and SCIM discovery so far. */
@Module({
  imports: [CredentialManagementStoreModule, AccountsModule, AuthModule],
  controllers: [UsersController, ServiceProviderConfigController, ResourceTypesController, SchemasController],
  providers: [
    ScimUserService,
    DiscoveryDocuments,
    { provide: UserPresenter, inject: [AppConfig], useFactory: (config: AppConfig) => new UserPresenter(config.publicBaseUrl) },
  ],
})
export class CredentialManagementModule {}
