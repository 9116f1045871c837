import { Injectable } from '@nestjs/common';
import { OrganizationService, PasswordHasher, UserRepository, type UserRow } from '@app/accounts';
import { Clock, DomainError, OAuthError, RequestOrigin } from '@app/common';
import { Metrics } from '@app/observability';
import { ClaimedIdentity, claimed } from '../clients/claimed-identity';
import { LockoutService, PasswordTurn } from '../clients/lockout.service';
import { SignInFactorPolicy } from '../grants/sign-in-factor.policy';
import { SignInSessionService } from '../sessions/sign-in-session.service';
import { AuthenticationMethod, SignInSession } from '../sessions/sign-in-sessions';
import type { PasswordStep } from './login-form-protection';
import { OneTimeCodes } from './one-time-codes';
import { SmartCardLogons } from './smart-card-logons';

/** The one message of every failed sign-in (DECISIONS 14.1): it tells nobody which part was wrong, or whether the user exists. */
export const GENERIC_FAILURE = 'The sign-in did not succeed. Check your user name, password and code, and try again.';
const MISSING_FIELDS = 'Enter your user name and password.';
const MAX_USER_NAME = 128;
const MAX_PASSWORD = 1024;
const CODE = /^[0-9]{6,8}$/;

export type LoginOutcome =
  | { kind: 'signed-in'; cookieValue: string; session: SignInSession }
  /** The password was right; the person's one-time code comes next. */
  | { kind: 'code'; step: PasswordStep }
  /** Wrong or missing credentials: the form again, with `message`. */
  | { kind: 'failed'; message: string }
  /** The password was right but is not enough for this person (SignInFactorPolicy). */
  | { kind: 'refused'; message: string }
  /** Too many failures for this userName from this address, or from this address; or no password-hashing turn is free: try again after `retryAfter`. */
  | { kind: 'locked'; message: string; retryAfter: string };

type Origin = RequestOrigin & { userAgent?: string };
/** Every outcome but the password step's `code`. */
export type FinalOutcome = Exclude<LoginOutcome, { kind: 'code' }>;

/**
 * The hosted login page's rules (DECISIONS 14.1): the password (hashed in the bounded
 * PasswordHashSlots, a dummy hash for unknown userNames so they take as long), then what
 * SignInFactorPolicy asks (the one-time code, or nothing where the organization allows a password
 * alone), the lockout of DECISIONS 4 per userName and address and per address, every failure and
 * lockout audited (`sign_in.fail`, `sign_in.lockout`), every sign-in opening a new session.
 */
@Injectable()
export class LoginService {
  constructor(
    private readonly users: UserRepository,
    private readonly organizations: OrganizationService,
    private readonly passwords: PasswordHasher,
    private readonly factors: SignInFactorPolicy,
    private readonly codes: OneTimeCodes,
    private readonly smartCards: SmartCardLogons,
    private readonly lockout: LockoutService,
    private readonly sessions: SignInSessionService,
    private readonly clock: Clock,
    private readonly metrics: Metrics,
  ) {}

  async withPassword(org: string, userName: string | undefined, password: string | undefined, origin: Origin): Promise<LoginOutcome> {
    if (!userName || !password) return { kind: 'failed', message: MISSING_FIELDS };
    const subject = lockoutSubject(org, userName);
    if (userName.length > MAX_USER_NAME || password.length > MAX_PASSWORD) {
      return (await this.locked(subject, origin.sourceAddress, org)) ?? this.failed('malformed', subject, claimed(userName, false), org, origin, 'password');
    }
    // Counted before the hash, as the password grant counts it (DECISIONS 4): guesses sent at once get no more checks than the limits.
    let turn: PasswordTurn;
    try {
      turn = await this.lockout.takePasswordTurn(subject, origin.sourceAddress, org);
    } catch (error) {
      return lockedOutcome(error);
    }
    const found = await this.users.findWithPasswordHash(org, userName);
    // Unknown users and users without a password cost the same scrypt run as a wrong password.
    let matches: boolean;
    try {
      // The hashing turns are shared per address (DECISIONS 4), so a flood from a few addresses does not take them from the others.
      matches = found?.passwordHash
        ? await this.passwords.verify(password, found.passwordHash, origin.sourceAddress)
        : await this.passwords.verifyDummy(password, origin.sourceAddress);
    } catch (error) {
      // Every hashing turn is taken (DECISIONS 3.5): nothing was checked, so nothing is counted; the page says so.
      await this.lockout.giveBack(turn);
      if (!(error instanceof DomainError) || error.code !== 'SERVICE_UNAVAILABLE') throw error;
      const retryAfter = error.headers['Retry-After'] ?? '1';
      return { kind: 'locked', message: `The service is busy. ${retryText(retryAfter)}`, retryAfter };
    }
    if (!found || !matches) return this.failed('wrong_password', subject, claimed(userName, found !== undefined), org, origin, 'password', turn);
    await this.lockout.giveBack(turn);
    if (found.user.disabled) return this.failed('disabled', subject, claimed(userName, true), org, origin, 'password');
    const second = this.factors.secondStep(found.user, {
      holdsOneTimeCode: await this.codes.holds(org, found.user.id),
      passwordOnlyAllowed: found.orgSettings.passwordOnlySignIn,
    });
    if (second.kind === 'otp') return { kind: 'code', step: { userId: found.user.id, userName: found.user.user_name } };
    if (second.kind === 'refused') {
      await this.record('factor_refused', subject, claimed(userName, true), org, origin, 'password');
      return { kind: 'refused', message: second.description };
    }
    return this.open(found.user, ['pwd'], origin);
  }

  async withCode(org: string, step: PasswordStep, code: string | undefined, origin: Origin): Promise<FinalOutcome> {
    const subject = lockoutSubject(org, step.userName);
    // The step token (MAC'ed) names a user who passed the password step: an existing account.
    const who = claimed(step.userName, true);
    const locked = await this.locked(subject, origin.sourceAddress);
    if (locked) return locked;
    if (!code || !CODE.test(code)) return this.failed('malformed_code', subject, who, org, origin, 'code');
    const user = await this.users.findInOrg(org, step.userId);
    if (!user || user.disabled) return this.failed('disabled', subject, who, org, origin, 'code');
    // Counted before the check, in one statement: codes sent at once, or from many addresses, get no more checks than the limit.
    const tooMany = await this.lockedBy(() => this.lockout.countCodeAttempt(org, user.id, user.user_name, origin, 'sign_in.lockout'));
    if (tooMany) return tooMany;
    if (!(await this.codes.accept(org, user.id, code, this.clock.now()))) return this.failed('wrong_code', subject, who, org, origin, 'code');
    await this.lockout.forgetCodeAttempts(org, user.id);
    return this.open(user, ['pwd', 'otp'], origin);
  }

  /**
   * A smart card: the client certificate the TLS handshake (or a trusted proxy) presented. Failures
   * count per address (no userName was claimed) and are audited with the refusal's reason.
   */
  async withCertificate(org: string, certificate: Buffer | undefined, origin: Origin): Promise<FinalOutcome> {
    const locked = await this.locked(undefined, origin.sourceAddress);
    if (locked) return locked;
    if (!certificate) {
      await this.record('no_certificate', undefined, undefined, org, origin, 'certificate');
      return { kind: 'failed', message: 'Your browser presented no smart card certificate. Insert your card and try again, or sign in with your password.' };
    }
    const holder = await this.smartCards.holderOf(org, certificate, this.clock.now());
    if ('refusal' in holder) return this.failed(`certificate_refused: ${holder.refusal}`, undefined, undefined, org, origin, 'certificate');
    const user = await this.users.findInOrg(org, holder.userId);
    if (!user || user.disabled) return this.failed('disabled', undefined, claimed(user?.user_name, true), org, origin, 'certificate');
    // A certificate is enough for anyone (SignInFactorPolicy); asked all the same, so the rule stays in one place.
    const refusal = this.factors.refusal(user, 'certificate');
    if (refusal) return this.failed('factor_refused', undefined, claimed(user.user_name, true), org, origin, 'certificate');
    return this.open(user, ['sc', 'hwk'], origin, holder.serial);
  }

  private async open(user: UserRow, amr: AuthenticationMethod[], origin: Origin, certificateSerial?: string): Promise<FinalOutcome> {
    const { cookieValue, session } = await this.sessions.open(
      { orgId: user.org_id, userId: user.id, userName: user.user_name, amr, certificateSerial },
      origin,
    );
    return { kind: 'signed-in', cookieValue, session };
  }

  /** The lockout's 429 as the page shows it; undefined while the pair, the address (and the organization's password budget) are within limits. */
  private locked(subject: string | undefined, address: string, passwordOrg?: string): Promise<FinalOutcome | undefined> {
    return this.lockedBy(() => this.lockout.assertNotLocked(subject, address, passwordOrg));
  }

  /** The page's `locked` outcome when `check` throws the lockout's 429. */
  private async lockedBy(check: () => Promise<void>): Promise<FinalOutcome | undefined> {
    try {
      await check();
      return undefined;
    } catch (error) {
      return lockedOutcome(error);
    }
  }

  private async failed(
    reason: string,
    subject: string | undefined,
    who: ClaimedIdentity | undefined,
    org: string,
    origin: Origin,
    step: 'password' | 'code' | 'certificate',
    turn?: PasswordTurn,
  ): Promise<FinalOutcome> {
    await this.record(reason, subject, who, org, origin, step, turn);
    return { kind: 'failed', message: GENERIC_FAILURE };
  }

  /** Counts the failure toward the lockout and audits it, whether the userName exists or not (DECISIONS 4). */
  private async record(
    reason: string,
    subject: string | undefined,
    who: ClaimedIdentity | undefined,
    org: string,
    origin: Origin,
    step: 'password' | 'code' | 'certificate',
    turn?: PasswordTurn,
  ): Promise<void> {
    this.metrics.authFailures.inc({ reason: `login_${reason}` });
    await this.lockout.recordFailure(
      subject,
      origin,
      reason,
      {
        org,
        claimed: who,
        method: step === 'certificate' ? 'smart_card' : step === 'code' ? 'otp' : 'password',
        actions: { fail: 'sign_in.fail', lockout: 'sign_in.lockout' },
        details: { step },
      },
      { turn },
    );
  }
}

/** The lockout's 429 as the page shows it; any other error goes on. */
function lockedOutcome(error: unknown): FinalOutcome {
  if (!(error instanceof OAuthError) || error.status !== 429) throw error;
  return {
    kind: 'locked',
    message: `Too many failed sign-ins. ${retryText(error.headers['Retry-After'])}`,
    retryAfter: error.headers['Retry-After'] ?? '1',
  };
}

/** userNames are unique per organization: counted as the password grant counts them, so both ways in share the limit. */
export function lockoutSubject(org: string, userName: string): string {
  return `user:${org}/${userName}`;
}

/** The page's sentence for a Retry-After (seconds): "Try again in 1 second.", "... 30 seconds.", "... 5 minutes.". */
export function retryText(retryAfter: string | undefined): string {
  const seconds = Number(retryAfter ?? '1');
  if (seconds >= 120) return `Try again in ${Math.ceil(seconds / 60)} minutes.`;
  return `Try again in ${seconds} ${seconds === 1 ? 'second' : 'seconds'}.`;
}
