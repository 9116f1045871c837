import { Module } from '@nestjs/common';
import { AccountDependents, AccountsModule } from '@app/accounts';
import { ClaimedIdentities } from './clients/claimed-identity';
import { LockoutService } from './clients/lockout.service';
import { AuthorizationGrantRepository } from './oidc/authorization-grant.repository';
import { SubjectTokens } from './tokens/subject-tokens';
import { SignInSessionRepository } from './sessions/sign-in-session.repository';
import { SignInSessionService } from './sessions/sign-in-session.service';
import { SignInSessions } from './sessions/sign-in-sessions';

/**
 * What libs/auth keeps about accounts (tokens, lockout counters, people's sessions), without the token service or the
 * HSM: the service and the command line both load it, so that re-enabling an account revokes its
 * tokens and deleting an organization forgets its counters, whichever of the two does it.
 */
@Module({
  imports: [AccountsModule],
  providers: [
    LockoutService,
    ClaimedIdentities,
    // Here, not in AuthModule: every way a session ends revokes the grants held through it.
    AuthorizationGrantRepository,
    SubjectTokens,
    SignInSessionRepository,
    SignInSessionService,
    // The port others inject (authorization, logout, the admin API): the same instance.
    { provide: SignInSessions, useExisting: SignInSessionService },
  ],
  exports: [LockoutService, ClaimedIdentities, SubjectTokens, SignInSessionService, SignInSessions, AuthorizationGrantRepository],
})
export class AuthStoreModule {
  constructor(dependents: AccountDependents, lockout: LockoutService, tokens: SubjectTokens, sessions: SignInSessionService) {
    dependents.registerTokenRevoker((subject, at, tx) => tokens.revokeAll(subject, at, tx));
    // A person's sessions end at once when they are disabled or their password changes (DECISIONS 14.2);
    // a deleted user's rows go with the user (ON DELETE CASCADE).
    dependents.registerUserWriteListener(async (user, change, actor, tx) => {
      if (change === 'updated' && user.disabled) await sessions.endAllOfUser(user.org_id, user.id, 'user_disabled', actor, tx);
    });
    dependents.registerPasswordChangeListener((user, actor, tx) =>
      sessions.endAllOfUser(user.org_id, user.id, 'password_changed', actor, tx).then(() => undefined),
    );
    // A password alone is a way in only while the organization allows it: turning it off ends those sessions too.
    dependents.registerSettingsChangeListener(async (orgId, settings, actor, tx) => {
      if (!settings.passwordOnlySignIn) await sessions.endAllPasswordOnly(orgId, actor, tx);
    });
    // The admin API's lastSignIn of each user (DECISIONS 17.2): read from the record of sessions this library owns.
    dependents.registerLastSignInReader((orgId, userIds) => sessions.lastSignIns(orgId, userIds));
    dependents.registerRemover((orgId, tx) => tokens.forgetOrganization(orgId, tx));
    dependents.registerRemover((orgId, tx) => lockout.forgetOrganization(orgId, tx));
  }
}
