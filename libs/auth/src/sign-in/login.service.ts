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
import { PASSKEY_MESSAGES, PasskeyCeremonies } from './passkeys/passkey-ceremonies';
import { PasskeyCredentials } from './passkeys/passkey-credentials';
import { SmartCardLogons } from './smart-card-logons';

/** The one message of every failed sign-in (DECISIONS 14.1): it tells nobody which part was wrong, or whether the user exists. */
export const GENERIC_FAILURE = 'The sign-in did not succeed. Check your user name, password and code, and try again.';
const MISSING_FIELDS = 'Enter your user name and password.';
const MAX_USER_NAME = 128;
const MAX_PASSWORD = 1024;
const CODE = /^[0-9]{6,8}$/;

export type LoginOutcome =
  | { kind: 'signed-in'; cookieValue: string; session: SignInSession }
  /** The password was right; the person's one-time code or one of their passkeys comes next. */
  | { kind: 'code'; step: PasswordStep; code: boolean; passkey: boolean }
  /** The password was right, and an administrator's mark asks this person, who holds no second factor, to enrol one first (DECISIONS 14.5). */
  | { kind: 'enrol'; step: PasswordStep }
  /** Wrong or missing credentials: the form again, with `message`. */
  | { kind: 'failed'; message: string }
  /** The password was right but is not enough for this person (SignInFactorPolicy). */
  | { kind: 'refused'; message: string }
  /** Too many failures for this userName from this address, or from this address; or no password-hashing turn is free: try again after `retryAfter`. */
  | { kind: 'locked'; message: string; retryAfter: string };

type Origin = RequestOrigin & { userAgent?: string };
/** Every outcome but the password step's `code` and `enrol`. */
export type FinalOutcome = Exclude<LoginOutcome, { kind: 'code' } | { kind: 'enrol' }>;

/** The refusal of a passkey alone where the organization does not allow it (DECISIONS 14.5). */
export const PASSWORDLESS_OFF =
  'This organization does not allow signing in with a passkey alone. Sign in with your user name and password, then your passkey.';

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
    private readonly passkeys: PasskeyCredentials,
    private readonly ceremonies: PasskeyCeremonies,
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
    const [holdsCode, passkeys] = await Promise.all([this.codes.holds(org, found.user.id), this.passkeys.owned(org, found.user.id)]);
    const step = { userId: found.user.id, userName: found.user.user_name };
    // An administrator's mark (DECISIONS 14.5): no session before a second factor is enrolled.
    if (found.mustEnrolSecondFactor && !holdsCode && passkeys.length === 0) return { kind: 'enrol', step };
    const second = this.factors.secondStep(found.user, {
      holdsOneTimeCode: holdsCode || passkeys.length > 0,
      passwordOnlyAllowed: found.orgSettings.passwordOnlySignIn,
    });
    if (second.kind === 'otp') return { kind: 'code', step, code: holdsCode, passkey: passkeys.length > 0 };
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

  /** Which second factors the person holds (the code page offers them). */
  async secondFactorsOf(org: string, userId: string): Promise<{ code: boolean; passkey: boolean }> {
    const [code, passkeys] = await Promise.all([this.codes.holds(org, userId), this.passkeys.owned(org, userId)]);
    return { code, passkey: passkeys.length > 0 };
  }

  /**
   * A passkey as the second step (DECISIONS 14.5): the answer to the challenge of this person's code
   * page, checked by PasskeyCeremonies (single-use challenge of this flow, origin, RP id, signature,
   * the counter forward only). Counted per person before the check, as a code is; every refusal is a
   * failed sign-in with its reason, and the page says what was wrong.
   */
  async withPasskey(org: string, step: PasswordStep, answer: string | undefined, flow: string, origin: Origin): Promise<FinalOutcome> {
    const subject = lockoutSubject(org, step.userName);
    const who = claimed(step.userName, true);
    const locked = await this.locked(subject, origin.sourceAddress);
    if (locked) return locked;
    const user = await this.users.findInOrg(org, step.userId);
    if (!user || user.disabled) return this.failed('disabled', subject, who, org, origin, 'passkey');
    const tooMany = await this.lockedBy(() => this.lockout.countCodeAttempt(org, user.id, user.user_name, origin, 'sign_in.lockout'));
    if (tooMany) return tooMany;
    const checked = await this.ceremonies.verifyAuthentication(org, user.id, flow, answer);
    if (!checked.ok) {
      await this.record(`passkey_${checked.refusal}`, subject, who, org, origin, 'passkey', undefined, checked.passkey?.credentialId);
      return { kind: 'failed', message: PASSKEY_MESSAGES[checked.refusal] };
    }
    await this.lockout.forgetCodeAttempts(org, user.id);
    return this.open(user, ['pwd', 'hwk'], origin);
  }

  /**
   * A passkey alone (DECISIONS 14.5), where the organization's `passwordlessSignIn` allows it: a
   * discoverable passkey with user verification, whose user handle names its owner. Failures count
   * per address (nobody was claimed) and are audited with their reason.
   */
  async withPasskeyAlone(org: string, answer: string | undefined, flow: string, origin: Origin): Promise<FinalOutcome> {
    const locked = await this.locked(undefined, origin.sourceAddress);
    if (locked) return locked;
    const organization = await this.organizations.get(org);
    if (!organization.settings.passwordlessSignIn) {
      await this.record('passwordless_not_allowed', undefined, undefined, org, origin, 'passkey');
      return { kind: 'failed', message: PASSWORDLESS_OFF };
    }
    const checked = await this.ceremonies.verifyAuthentication(org, undefined, flow, answer);
    if (!checked.ok) {
      const owner = checked.passkey ? await this.users.findInOrg(org, checked.passkey.userId) : undefined;
      await this.record(
        `passkey_${checked.refusal}`,
        undefined,
        claimed(owner?.user_name, true),
        org,
        origin,
        'passkey',
        undefined,
        checked.passkey?.credentialId,
      );
      return { kind: 'failed', message: PASSKEY_MESSAGES[checked.refusal] };
    }
    const user = await this.users.findInOrg(org, checked.passkey.userId);
    if (!user || user.disabled) return this.failed('disabled', undefined, claimed(user?.user_name, true), org, origin, 'passkey');
    return this.open(user, ['hwk', 'user'], origin);
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
    step: SignInStep,
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
    step: SignInStep,
    turn?: PasswordTurn,
    credential?: string,
  ): Promise<void> {
    this.metrics.authFailures.inc({ reason: `login_${reason}` });
    await this.lockout.recordFailure(
      subject,
      origin,
      reason,
      {
        org,
        claimed: who,
        method: METHODS[step],
        actions: { fail: 'sign_in.fail', lockout: 'sign_in.lockout' },
        details: credential ? { step, credential } : { step },
      },
      { turn },
    );
  }
}

type SignInStep = 'password' | 'code' | 'certificate' | 'passkey';
/** The audit's `method` of a failure at each step. */
const METHODS: Record<SignInStep, string> = { password: 'password', code: 'otp', certificate: 'smart_card', passkey: 'passkey' };

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
