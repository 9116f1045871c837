import { Injectable } from '@nestjs/common';
import type { UserRow } from '@app/accounts';
import { Scope } from '../authorization/permissions';
import { RoleCatalog } from '../authorization/role-catalog';

/**
 * What a user presents to sign in: the key of an enrolled certificate, a password, or the approval
 * of a CIBA request signed by one of their authenticator apps (DECISIONS 16).
 */
export type SignInFactor = 'certificate' | 'password' | 'authenticator';

/**
 * Who may sign in with which factor (DECISIONS 3.5), in one place for every way in (the token
 * endpoint's grants today, a hosted login later). A certificate is enough for anyone. A password
 * alone is enough only for a cardholder whose role grants no operator scope (nothing beyond
 * Scope.device): an operator, or a cardholder given an operator's role, signs in with a certificate.
 * An authenticator app's approval (CIBA) is one factor too, held like a password to the same rule:
 * a client never gets an operator's token from a tap on a phone.
 */
@Injectable()
export class SignInFactorPolicy {
  constructor(private readonly roles: RoleCatalog) {}

  /**
   * Undefined when `factor` alone lets `user` sign in, else the refusal's description. Ask only after
   * the factor was verified: the description tells that the user exists (DECISIONS 3.1).
   */
  refusal(user: Pick<UserRow, 'user_type' | 'role'>, factor: SignInFactor): string | undefined {
    if (factor === 'certificate' || !this.isOperator(user)) return undefined;
    const who = user.user_type === 'operator' ? 'an operator' : `given the operator role "${user.role}"`;
    if (factor === 'authenticator') {
      return `Out-of-band approval (CIBA) is for cardholders only: operators sign in with their certificate (jwt-bearer), and this user is ${who}.`;
    }
    return (
      'Operators sign in with their certificate (jwt-bearer): the password grant is for cardholders only, ' +
      `and this user is ${user.user_type === 'operator' ? 'an operator' : `given the operator role "${user.role}"`}.`
    );
  }

  /** An operator by type, or by a role that grants any scope beyond a cardholder's Scope.device. */
  private isOperator(user: Pick<UserRow, 'user_type' | 'role'>): boolean {
    return user.user_type === 'operator' || (this.roles.find(user.role)?.scopes ?? []).some((scope) => scope !== Scope.Device);
  }
}
