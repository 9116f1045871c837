import { Injectable } from '@nestjs/common';
import { Clock, OAuthError, RequestOrigin } from '@app/common';
import { OrganizationService, PasswordHasher, UserRepository, UserWithSettings } from '@app/accounts';
import { Metrics } from '@app/observability';
import { AssertionVerifier } from '../clients/assertion-verifier';
import { claimed } from '../clients/claimed-identity';
import { expiredCertificate } from '../clients/client-authenticator.service';
import { FailureAudit, LockoutService, PasswordTurn } from '../clients/lockout.service';
import { TokenRepository } from '../tokens/token.repository';
import { SignInFactorPolicy } from './sign-in-factor.policy';

export const JWT_BEARER_GRANT = 'urn:ietf:params:oauth:grant-type:jwt-bearer';
export const PASSWORD_GRANT = 'password';

export interface AuthenticatedUser extends UserWithSettings {
  method: 'jwt_bearer' | 'password';
}

/** One answer for an unknown user, a bad signature and a certificate of someone else. */
const GENERIC_ASSERTION_FAILURE = 'The assertion was not accepted.';
const GENERIC_PASSWORD_FAILURE = 'The user name or password is wrong.';

/**
 * Operators and cardholders at the token endpoint (DECISIONS 3.5): the RFC 7523 jwt-bearer grant,
 * signed with the key of the user's enrolled certificate (the checks of 3.3 with sub = userName),
 * and, for cardholders, the password grant (who may use which factor: SignInFactorPolicy). Failures
 * are 400 invalid_grant and count toward the lockout per userName, as for clients.
 */
@Injectable()
export class UserAuthenticator {
  constructor(
    private readonly users: UserRepository,
    private readonly organizations: OrganizationService,
    private readonly passwords: PasswordHasher,
    private readonly factors: SignInFactorPolicy,
    private readonly assertions: AssertionVerifier,
    private readonly lockout: LockoutService,
    private readonly tokens: TokenRepository,
    private readonly clock: Clock,
    private readonly metrics: Metrics,
  ) {}

  async withAssertion(org: string, jwt: string | undefined, origin: RequestOrigin, audiences: string[]): Promise<AuthenticatedUser> {
    const { sourceAddress } = origin;
    if (!jwt) throw OAuthError.invalidRequest(`The ${JWT_BEARER_GRANT} grant needs the assertion parameter.`);
    const refuse = (description: string) => OAuthError.invalidGrant(description);
    // The userName is named in the log once the user is found (ClaimedIdentities).
    const audit = (userName: string | undefined, exists = false): FailureAudit => ({ org, claimed: claimed(userName, exists), method: 'jwt_bearer' });
    let assertion;
    try {
      assertion = this.assertions.parse(jwt, refuse);
    } catch (error) {
      throw await this.failed('malformed_assertion', undefined, origin, error as OAuthError, audit(undefined));
    }
    const subject = lockoutSubject(org, assertion.subject);
    await this.lockout.assertNotLocked(subject, sourceAddress);
    const found = await this.users.findWithCertificates(org, assertion.subject);
    if (!found) throw await this.failed('unknown_user', subject, origin, refuse(GENERIC_ASSERTION_FAILURE), audit(assertion.subject));
    if (found.certificates.length === 0) {
      // Accepted disclosure (DECISIONS 3.5): the user exists but must enroll a certificate first.
      throw await this.failed(
        'no_certificate',
        subject,
        origin,
        refuse(`User ${assertion.subject} has no enrolled certificate; an administrator must enroll one before the user can sign in.`),
        audit(assertion.subject, true),
      );
    }
    const certificate = this.assertions.findSigner(assertion, found.certificates);
    if (!certificate) throw await this.failed('bad_signature', subject, origin, refuse(GENERIC_ASSERTION_FAILURE), audit(assertion.subject, true));
    try {
      const { expiresAt } = this.assertions.checkAfterPossession(assertion, certificate, audiences, refuse);
      if (found.user.disabled) throw refuse('The user is disabled.');
      const factorRefusal = this.factors.refusal(found.user, 'certificate');
      if (factorRefusal) throw refuse(factorRefusal);
      if (!(await this.tokens.rememberUserJti(found.user.id, assertion.claims.jti as string, expiresAt))) {
        throw refuse("The assertion's jti was used before; every assertion needs a new jti.");
      }
    } catch (error) {
      // An expired certificate still in use is a security event of its own (DECISIONS 11).
      const expired = expiredCertificate(certificate, this.clock.now());
      throw await this.failed(expired ? 'certificate_expired' : 'assertion_rejected', subject, origin, error as OAuthError, {
        ...audit(assertion.subject, true),
        expiredCertificate: expired,
      });
    }
    return { user: found.user, orgSettings: found.orgSettings, method: 'jwt_bearer' };
  }

  async withPassword(org: string, userName: string | undefined, password: string | undefined, origin: RequestOrigin): Promise<AuthenticatedUser> {
    const { sourceAddress } = origin;
    if (!userName || password === undefined) throw OAuthError.invalidRequest('The password grant needs the username and password parameters.');
    const subject = lockoutSubject(org, userName);
    // Asked of the organization, not the user, so that known and unknown userNames get this answer
    // alike and at once, before any lookup or hash (DECISIONS 3.5).
    if ((await this.organizations.findSettings(org))?.passwordGrant === false) {
      throw new OAuthError('unauthorized_client', 'The password grant is switched off for this organization; sign in with a certificate (jwt-bearer).', 400);
    }
    // Counted before the hash, on the pair, the address and the organization's budget (past it, every
    // userName waits alike): guesses sent at once get no more checks than the limits (DECISIONS 4).
    const turn = await this.lockout.takePasswordTurn(subject, sourceAddress, org);
    const found = await this.users.findWithPasswordHash(org, userName);
    // Unknown users and users without a password cost the same scrypt run as a wrong password.
    let matches: boolean;
    try {
      // The hashing turns are shared per address (DECISIONS 4), so a flood from a few addresses does not take them from the others.
      matches = found?.passwordHash
        ? await this.passwords.verify(password, found.passwordHash, sourceAddress)
        : await this.passwords.verifyDummy(password, sourceAddress);
    } catch (error) {
      // Nothing was checked (every hashing turn was taken, DECISIONS 3.5), so nothing is counted.
      await this.lockout.giveBack(turn);
      throw error;
    }
    if (!found || !matches) {
      throw await this.failed(
        'wrong_password',
        subject,
        origin,
        OAuthError.invalidGrant(GENERIC_PASSWORD_FAILURE),
        { org, claimed: claimed(userName, found !== undefined), method: 'password' },
        { turn },
      );
    }
    await this.lockout.giveBack(turn);
    if (found.user.disabled) {
      throw await this.failed('disabled', subject, origin, OAuthError.invalidGrant('The user is disabled.'), {
        org,
        claimed: claimed(userName, true),
        method: 'password',
      });
    }
    const factorRefusal = this.factors.refusal(found.user, 'password');
    if (factorRefusal) {
      throw await this.failed('factor_refused', subject, origin, OAuthError.invalidGrant(factorRefusal), {
        org,
        claimed: claimed(userName, true),
        method: 'password',
      });
    }
    return { user: found.user, orgSettings: found.orgSettings, method: 'password' };
  }

  /** Counts the failure for the claimed userName, whether it exists or not (DECISIONS 4). */
  private async failed(
    reason: string,
    subject: string | undefined,
    origin: RequestOrigin,
    error: OAuthError,
    audit: FailureAudit,
    counts?: { turn: PasswordTurn },
  ): Promise<OAuthError> {
    this.metrics.authFailures.inc({ reason: `user_${reason}` });
    await this.lockout.recordFailure(subject, origin, reason, audit, counts);
    return error;
  }
}

/** userNames are unique per organization, so the lockout counts them with their organization. */
function lockoutSubject(org: string, userName: string): string {
  return `user:${org}/${userName}`;
}
