import { Injectable } from '@nestjs/common';
import { AccountDependents } from '@app/accounts';
import { AuditLog, byActor } from '@app/audit';
import { AuthenticatorRepository } from './authenticator.repository';

/**
 * A disabled person loses every authenticator in the transaction that disables them (CREDENTIAL-
 * MANAGEMENT.md "Authenticators"), whoever disables them (API or command line): a user-write
 * listener, never a sweep. Re-enabling brings nothing back. A deleted person's go with the user row
 * (ON DELETE CASCADE), recorded by the user's own deletion event.
 */
@Injectable()
export class AuthenticatorRemoval {
  constructor(
    private readonly authenticators: AuthenticatorRepository,
    private readonly audit: AuditLog,
  ) {}

  register(dependents: AccountDependents): void {
    dependents.registerUserWriteListener(async (user, _change, actor, tx) => {
      if (!user.disabled) return;
      const removed = await this.authenticators.removeAllOf(user.org_id, user.id, tx);
      await this.audit.recordMany(
        removed.map((row) => ({
          org: row.org_id,
          ...byActor(actor),
          action: 'authenticator.remove' as const,
          target: row.id,
          outcome: 'success' as const,
          details: { user: row.user_id, thumbprint: row.thumbprint, reason: 'userDisabled' },
        })),
        tx,
      );
    });
  }
}
