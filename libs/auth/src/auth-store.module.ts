import { Module } from '@nestjs/common';
import { AccountDependents, AccountsModule } from '@app/accounts';
import { LockoutService } from './clients/lockout.service';
import { SubjectTokens } from './tokens/subject-tokens';

/**
 * What libs/auth keeps about accounts (tokens, lockout counters), without the token service or the
 * HSM: the service and the command line both load it, so that re-enabling an account revokes its
 * tokens and deleting an organization forgets its counters, whichever of the two does it.
 */
@Module({
  imports: [AccountsModule],
  providers: [LockoutService, SubjectTokens],
  exports: [LockoutService, SubjectTokens],
})
export class AuthStoreModule {
  constructor(dependents: AccountDependents, lockout: LockoutService, tokens: SubjectTokens) {
    dependents.registerTokenRevoker((subject, at, tx) => tokens.revokeAll(subject, at, tx));
    dependents.registerRemover((orgId, tx) => tokens.forgetOrganization(orgId, tx));
    dependents.registerRemover((orgId, tx) => lockout.forgetOrganization(orgId, tx));
  }
}
