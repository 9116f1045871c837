import { createHash } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { EnrolmentLinkRefusal, EnrolmentLinks, PasswordHasher, UserRepository, UserRow, UserService } from '@app/accounts';
import { AuditLog } from '@app/audit';
import { Clock, DataCipher, DomainError, OAuthError, RequestOrigin } from '@app/common';
import { Database } from '@app/persistence';
import { LockoutService } from '../../clients/lockout.service';
import { SignInSessionService } from '../../sessions/sign-in-session.service';
import { SignInSession } from '../../sessions/sign-in-sessions';
import { lockoutSubject, retryText } from '../login.service';
import { OfferedTotp, TotpEnrolment } from './totp-enrolment';

type Origin = RequestOrigin & { userAgent?: string };

/** How long the password step's result waits for the code that confirms the authenticator. */
const STATE_LIFETIME_MS = 15 * 60 * 1000;
const MAX_STATE = 4096;
const DISABLED = 'This account is disabled. Ask an administrator.';

/** What the page says of a link that does not open (DECISIONS 14.4): what happened, and what to do. */
export const LINK_REFUSALS: Record<EnrolmentLinkRefusal, string> = {
  unknown: 'This enrolment link is not valid: check that you copied all of it, or ask an administrator for a new one.',
  used: 'This enrolment link has been used already. Sign in with your password and code, or ask an administrator for a new link.',
  replaced: 'A newer enrolment link was made for you, and it replaces this one. Use the newest link, or ask an administrator for a new one.',
  expired: 'This enrolment link has expired. Ask an administrator for a new one.',
};

/** What the password step carries to the code step, sealed in the page (never stored server-side). */
interface EnrolmentState {
  linkId: string;
  userId: string;
  userName: string;
  /** Null for an add-factor ticket, which keeps the person's password (DECISIONS 14.5). */
  passwordHash: string | null;
  totp: OfferedTotp;
}

/** Said when an add-factor ticket is opened outside the browser session that asked for it (DECISIONS 14.5). */
export const OTHER_SESSION =
  'This link adds a factor only in the browser session that asked for it, while it is signed in. Go back to the Security page of the portal and start again.';

export type EnrolmentOutcome =
  /** The link does not work (or no longer): a page that says why. */
  | { kind: 'refused'; message: string }
  /** The password form again, with its error. */
  | { kind: 'password'; userName: string; error: string }
  /** The authenticator step: the QR code of `totp.uri`, with `error` after a wrong code. */
  | { kind: 'totp'; userName: string; state: string; totp: OfferedTotp; error?: string; addFactor?: boolean }
  | { kind: 'locked'; userName: string; state: string; totp: OfferedTotp; message: string; retryAfter: string; addFactor?: boolean }
  | { kind: 'signed-in'; cookieValue: string; session: SignInSession }
  /** An add-factor ticket's factor enrolled: back to the portal's Security page, signed in as before. */
  | { kind: 'factor-added' };

/**
 * A person's enrolment through their one-time link (DECISIONS 14.4): the link opens a page where they
 * choose a password (the rules of DECISIONS 3.5), then add an authenticator app (a new OATH TOTP
 * secret they confirm with one code). Nothing is written until that code is right: then one
 * transaction uses the link (once: of two tries exactly one wins), stores the password, issues the
 * OATH_TOTP credential (credential management, through TotpEnrolment) and opens the sign-in session.
 * Between the two steps the password's hash and the offered secret travel sealed in the page
 * (DataCipher, bound to the organization, the browser's pre-session cookie, the link and 15 minutes).
 * Wrong codes count toward the person's code limit and are audited as failed sign-ins (DECISIONS 14.1).
 */
@Injectable()
export class EnrolmentService {
  constructor(
    private readonly links: EnrolmentLinks,
    private readonly users: UserService,
    private readonly userRows: UserRepository,
    private readonly passwords: PasswordHasher,
    private readonly totp: TotpEnrolment,
    private readonly sessions: SignInSessionService,
    private readonly lockout: LockoutService,
    private readonly cipher: DataCipher,
    private readonly audit: AuditLog,
    private readonly db: Database,
    private readonly clock: Clock,
  ) {}

  /**
   * Opening the link: the password step of an enrolment link, or, for a signed-in person's add-factor
   * ticket opened in its own browser session, the factor step at once (DECISIONS 14.5); or why it does not work.
   */
  async open(org: string, link: string | undefined, session: SignInSession | null, formCookie: string): Promise<EnrolmentOutcome> {
    const found = await this.usableLink(org, link, session);
    if ('refused' in found) return { kind: 'refused', message: found.refused };
    if (!found.addFactor) return { kind: 'password', userName: found.user.user_name, error: '' };
    return this.offerFactor(org, formCookie, link!, { linkId: found.linkId, userId: found.user.id, userName: found.user.user_name, passwordHash: null });
  }

  /** The factor step: a new authenticator secret, sealed with what the code step needs. Writes nothing. */
  private async offerFactor(org: string, formCookie: string, link: string, state: Omit<EnrolmentState, 'totp'>): Promise<EnrolmentOutcome> {
    const totp = await this.totp.offer(org, state.userName);
    const addFactor = state.passwordHash === null;
    return { kind: 'totp', userName: state.userName, state: this.seal(org, formCookie, link, { ...state, totp }), totp, addFactor };
  }

  /** The password step: checks the rules, hashes it, and offers a new authenticator secret. Writes nothing. */
  async choosePassword(
    org: string,
    link: string | undefined,
    password: string | undefined,
    confirmation: string | undefined,
    formCookie: string,
  ): Promise<EnrolmentOutcome> {
    const found = await this.usableLink(org, link, null);
    if ('refused' in found) return { kind: 'refused', message: found.refused };
    const { linkId, user } = found;
    const userName = user.user_name;
    if (!password) return { kind: 'password', userName, error: 'Enter a password.' };
    if (password !== confirmation) return { kind: 'password', userName, error: 'The two passwords are not the same. Type the same password twice.' };
    let passwordHash: string;
    try {
      passwordHash = await this.passwords.hash(password);
    } catch (error) {
      if (error instanceof DomainError && error.code === 'INVALID_VALUE') return { kind: 'password', userName, error: sentence(error.message) };
      throw error;
    }
    return this.offerFactor(org, formCookie, link!, { linkId, userId: user.id, userName, passwordHash });
  }

  /** The code step: a right code enrols the person and signs them in, in one transaction. */
  async confirmTotp(
    org: string,
    link: string | undefined,
    stateToken: string | undefined,
    code: string | undefined,
    formCookie: string,
    origin: Origin,
    session: SignInSession | null = null,
  ): Promise<EnrolmentOutcome> {
    const linkState = await this.links.state(org, link);
    if (!linkState.open) return { kind: 'refused', message: LINK_REFUSALS[linkState.refusal] };
    const addFactor = linkState.purpose === 'add_factor';
    if (addFactor && !ownSession(session, org, linkState)) return { kind: 'refused', message: OTHER_SESSION };
    const state = this.unseal(org, formCookie, link!, stateToken);
    if (!state || state.linkId !== linkState.id || state.userId !== linkState.userId || (state.passwordHash === null) !== addFactor) {
      return { kind: 'refused', message: 'This step took too long or did not come from this page. Open your enrolment link again: it still works.' };
    }
    try {
      // Counted before the check, per person, as the login page's code step (DECISIONS 14.1).
      await this.lockout.countCodeAttempt(org, state.userId, state.userName, origin, 'sign_in.lockout');
    } catch (error) {
      if (!(error instanceof OAuthError) || error.status !== 429) throw error;
      const retryAfter = error.headers['Retry-After'] ?? '1';
      return {
        kind: 'locked',
        userName: state.userName,
        state: stateToken!,
        totp: state.totp,
        message: `Too many codes tried. ${retryText(retryAfter)}`,
        retryAfter,
        addFactor,
      };
    }
    const step = code && /^[0-9]{6,8}$/.test(code) ? this.totp.check(state.totp, code, this.clock.now()) : undefined;
    if (step === undefined) {
      await this.lockout.recordFailure(lockoutSubject(org, state.userName), origin, 'wrong_code', {
        org,
        // The link named this person: an existing account, recorded by name (DECISIONS 11).
        claimed: { text: state.userName, exists: true },
        method: 'otp',
        actions: { fail: 'sign_in.fail', lockout: 'sign_in.lockout' },
        details: { step: 'enrolment' },
      });
      return {
        kind: 'totp',
        userName: state.userName,
        state: stateToken!,
        totp: state.totp,
        error: 'That code is not right. Check that the app shows this account, and type the code it shows now.',
        addFactor,
      };
    }
    const actor = { name: state.userName, sourceAddress: origin.sourceAddress, correlationId: origin.correlationId };
    const outcome = await this.db.transaction(async (tx): Promise<EnrolmentOutcome> => {
      const user = await this.userRows.lockInOrg(org, state.userId, tx);
      if (!user || user.disabled) return { kind: 'refused', message: DISABLED };
      // Used meanwhile (another tab, the same form twice), replaced or expired: why is read after this transaction.
      if (!(await this.links.use(org, link!, state.userId, tx))) return { kind: 'refused', message: '' };
      if (state.passwordHash === null) {
        // An add-factor ticket (DECISIONS 14.5): one more factor, nothing else; the password, the other factors and the sessions stay.
        const added = await this.totp.enrol(org, user.id, { ...state.totp, step }, actor, tx);
        await this.audit.record(
          {
            org,
            actor: actor.name,
            action: 'user.factor.add',
            target: user.id,
            outcome: 'success',
            sourceAddress: actor.sourceAddress,
            correlationId: actor.correlationId,
            details: { link: state.linkId, credential: added, type: 'OATH_TOTP' },
          },
          tx,
        );
        return { kind: 'factor-added' };
      }
      await this.users.writePasswordHash(org, user.id, state.passwordHash, actor, tx);
      const credential = await this.totp.enrol(org, user.id, { ...state.totp, step }, actor, tx);
      await this.audit.record(
        {
          org,
          actor: actor.name,
          action: 'user.enrolment.complete',
          target: user.id,
          outcome: 'success',
          sourceAddress: actor.sourceAddress,
          correlationId: actor.correlationId,
          details: { link: state.linkId, credential, factor: 'OATH_TOTP' },
        },
        tx,
      );
      const opened = await this.sessions.open({ orgId: org, userId: user.id, userName: user.user_name, amr: ['pwd', 'otp'] }, origin, tx);
      return { kind: 'signed-in', ...opened };
    });
    if (outcome.kind === 'refused' && outcome.message === '') {
      const now = await this.links.state(org, link);
      return { kind: 'refused', message: LINK_REFUSALS[now.open ? 'used' : now.refusal] };
    }
    if (outcome.kind === 'signed-in' || outcome.kind === 'factor-added') await this.lockout.forgetCodeAttempts(org, state.userId);
    return outcome;
  }

  /**
   * The link's open state and its person, or why it does not work (a disabled person's link opens
   * nothing; an add-factor ticket opens only in its browser session, when `session` is given).
   */
  private async usableLink(
    org: string,
    link: string | undefined,
    session: SignInSession | null,
  ): Promise<{ linkId: string; user: UserRow; addFactor: boolean } | { refused: string }> {
    const state = await this.links.state(org, link);
    if (!state.open) return { refused: LINK_REFUSALS[state.refusal] };
    const addFactor = state.purpose === 'add_factor';
    if (addFactor && !ownSession(session, org, state)) return { refused: OTHER_SESSION };
    const user = await this.userRows.findInOrg(org, state.userId);
    if (!user || user.disabled) return { refused: DISABLED };
    if (user.user_type === 'operator')
      return { refused: 'This account is an operator, who signs in with a certificate, not a password. Ask an administrator.' };
    return { linkId: state.id, user, addFactor };
  }

  private seal(org: string, formCookie: string, link: string, state: EnrolmentState): string {
    const payload = JSON.stringify({ ...state, expiresAt: this.clock.now().getTime() + STATE_LIFETIME_MS });
    const sealed = this.cipher.seal(payload, context(org, formCookie, link));
    return `${sealed.keyId}.${sealed.sealed.toString('base64url')}`;
  }

  private unseal(org: string, formCookie: string, link: string, token: string | undefined): EnrolmentState | undefined {
    if (!token || token.length > MAX_STATE) return undefined;
    const dot = token.lastIndexOf('.');
    if (dot <= 0) return undefined;
    try {
      const text = this.cipher.open({ keyId: token.slice(0, dot), sealed: Buffer.from(token.slice(dot + 1), 'base64url') }, context(org, formCookie, link));
      const parsed = JSON.parse(text) as EnrolmentState & { expiresAt: number };
      return parsed.expiresAt > this.clock.now().getTime() ? parsed : undefined;
    } catch {
      return undefined;
    }
  }
}

/** Whether the browser's live session is the one an add-factor ticket was made in, of its person and organization. */
function ownSession(session: SignInSession | null, org: string, link: { userId: string; sessionId: string | null }): boolean {
  return session !== null && session.org === org && session.userId === link.userId && session.id === link.sessionId;
}

/** The sealed state opens only for this organization, this browser's pre-session cookie and this link. */
function context(org: string, formCookie: string, link: string): string {
  return `enrolment|${org}|${formCookie}|${createHash('sha256').update(link).digest('base64url')}`;
}

/** "password must have ..." as the page says it. */
function sentence(message: string): string {
  return message.charAt(0).toUpperCase() + message.slice(1);
}
