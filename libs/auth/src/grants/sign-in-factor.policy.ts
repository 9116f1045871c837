import { Injectable } from '@nestjs/common';
import type { UserRow } from '@app/accounts';
import { Scope } from '../authorization/permissions';
import { RoleCatalog } from '../authorization/role-catalog';

/** What a user presents to sign in: the key of an enrolled certificate, or a password. */
export type SignInFactor = 'certificate' | 'password';

/**
 * What the hosted login page asks after a correct password (DECISIONS 14.1): the one-time code of the
 * person's OATH TOTP credential, nothing more (the password alone is enough), or a refusal's description.
 */
export type SecondStep = { kind: 'otp' } | { kind: 'none' } | { kind: 'refused'; description: string };

/**
 * Who may sign in with which factor (DECISIONS 3.5), in one place for every way in (the token
 * endpoint's grants today, a hosted login later). A certificate is enough for anyone. A password
 * alone is enough only for a cardholder whose role grants no operator scope (nothing beyond
 * Scope.device): an operator, or a cardholder given an operator's role, signs in with a certificate.
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
    return (
      'Operators sign in with their certificate (jwt-bearer): the password grant is for cardholders only, ' +
      `and this user is ${user.user_type === 'operator' ? 'an operator' : `given the operator role "${user.role}"`}.`
    );
  }

  /**
   * The hosted login page's second step after a correct password (DECISIONS 14.1). Whoever holds an
   * OATH TOTP credential types its code. Without one, the password alone is enough only for a
   * cardholder whose role grants no operator scope, in an organization whose `passwordOnlySignIn`
   * setting allows it; operators and administrators always need the code or a smart card (a smart
   * card is a certificate: `refusal(user, 'certificate')` lets anyone in).
   */
  secondStep(
    user: Pick<UserRow, 'user_type' | 'role'> & { administrator?: boolean },
    { holdsOneTimeCode, passwordOnlyAllowed }: { holdsOneTimeCode: boolean; passwordOnlyAllowed: boolean },
  ): SecondStep {
    if (holdsOneTimeCode) return { kind: 'otp' };
    if (passwordOnlyAllowed && !this.isOperator(user) && !user.administrator) return { kind: 'none' };
    return {
      kind: 'refused',
      description:
        'This account signs in with a one-time code or a smart card, and holds no one-time code credential; ask an administrator for one, or use a smart card.',
    };
  }

  /** An operator by type, or by a role that grants any scope beyond a cardholder's Scope.device. */
  private isOperator(user: Pick<UserRow, 'user_type' | 'role'>): boolean {
    return user.user_type === 'operator' || (this.roles.find(user.role)?.scopes ?? []).some((scope) => scope !== Scope.Device);
  }
}
