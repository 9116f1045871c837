import { Injectable } from '@nestjs/common';
import type { UserRow } from '@app/accounts';
import { Scope } from '../authorization/permissions';
import { RoleCatalog } from '../authorization/role-catalog';

/** What the policy reads of a user: its type, role and administrator flags. */
export type SignInSubject = Pick<UserRow, 'user_type' | 'role' | 'organization_administrator' | 'platform_administrator'>;

/**
 * What a user presents to sign in: the key of an enrolled certificate, a password, or the approval
 * of a CIBA request signed by one of their authenticator apps (DECISIONS 16).
 */
export type SignInFactor = 'certificate' | 'password' | 'authenticator';

/**
 * What the hosted login page asks after a correct password (DECISIONS 14.1): the one-time code of the
 * person's OATH TOTP credential, nothing more (the password alone is enough), or a refusal's description.
 */
export type SecondStep = { kind: 'otp' } | { kind: 'none' } | { kind: 'refused'; description: string };

/**
 * Who may sign in with which factor (DECISIONS 3.5), in one place for every way in (the token
 * endpoint's grants, the hosted login page, CIBA, and a session's later calls). A certificate is enough for anyone. A password
 * alone is enough only for a cardholder whose role grants no operator scope (nothing beyond
 * Scope.device) and who administers nothing: an operator, a cardholder given an operator's role,
 * and an administrator (DECISIONS 11) sign in with a certificate. An authenticator app's approval
 * (CIBA) is one factor too, held like a password to the same rule: a client never gets an
 * operator's or an administrator's token from a tap on a phone.
 */
@Injectable()
export class SignInFactorPolicy {
  constructor(private readonly roles: RoleCatalog) {}

  /**
   * Undefined when `factor` alone lets `user` sign in, else the refusal's description. Ask only after
   * the factor was verified: the description tells that the user exists (DECISIONS 3.1).
   */
  refusal(user: SignInSubject, factor: SignInFactor): string | undefined {
    if (factor === 'certificate') return undefined;
    const administrator = isAdministrator(user);
    if (!administrator && !this.isOperator(user)) return undefined;
    const who = administrator ? 'an administrator' : user.user_type === 'operator' ? 'an operator' : `given the operator role "${user.role}"`;
    if (factor === 'authenticator') {
      return `Out-of-band approval (CIBA) is for cardholders only: operators and administrators sign in with their certificate (jwt-bearer), and this user is ${who}.`;
    }
    return `Operators${administrator ? ' and administrators' : ''} sign in with their certificate (jwt-bearer): the password grant is for cardholders only, and this user is ${who}.`;
  }

  /**
   * The hosted login page's second step after a correct password (DECISIONS 14.1). Whoever holds an
   * OATH TOTP credential types its code. Without one, the password alone is enough only for a
   * cardholder whose role grants no operator scope, in an organization whose `passwordOnlySignIn`
   * setting allows it; operators and administrators always need the code or a smart card (a smart
   * card is a certificate: `refusal(user, 'certificate')` lets anyone in).
   */
  secondStep(user: SignInSubject, { holdsOneTimeCode, passwordOnlyAllowed }: { holdsOneTimeCode: boolean; passwordOnlyAllowed: boolean }): SecondStep {
    if (holdsOneTimeCode) return { kind: 'otp' };
    if (passwordOnlyAllowed && !this.isOperator(user) && !isAdministrator(user)) return { kind: 'none' };
    return {
      kind: 'refused',
      description:
        'This account signs in with a one-time code or a smart card, and holds no one-time code credential; ask an administrator for one, or use a smart card.',
    };
  }

  /** An operator by type, or by a role that grants any scope beyond a cardholder's Scope.device. */
  private isOperator(user: SignInSubject): boolean {
    return user.user_type === 'operator' || (this.roles.find(user.role)?.scopes ?? []).some((scope) => scope !== Scope.Device);
  }
}

/** An organization's or the platform's administrator (DECISIONS 11): never signs in with a password alone. */
function isAdministrator(user: SignInSubject): boolean {
  return user.organization_administrator || user.platform_administrator;
}
