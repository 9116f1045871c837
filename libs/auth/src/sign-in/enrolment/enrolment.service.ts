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
import { PASSKEY_MESSAGES, PasskeyCeremonies } from '../passkeys/passkey-ceremonies';
import { NewPasskey, PasskeyCredentials } from '../passkeys/passkey-credentials';
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

/**
 * How a person came to the factor step (DECISIONS 14.4, 14.5, 14.6): their enrolment link (after
 * choosing a password), an administrator's mark (after a right password at sign-in), the session a
 * passkey enrolment just opened (to add another), or an add-factor ticket of the portal's Security
 * page (in the live browser session that asked for it).
 */
export type FactorPurpose = 'link' | 'mark' | 'session' | 'ticket';

/** What the password step carries to the factor step, sealed in the page (never stored server-side). */
interface EnrolmentState {
  purpose: FactorPurpose;
  /** The link or ticket (purposes `link`, `ticket`). */
  linkId?: string;
  /** The session that asked (purposes `session`, `ticket`). */
  sessionId?: string;
  userId: string;
  userName: string;
  /** The password chosen (purpose `link`). */
  passwordHash?: string;
  totp: OfferedTotp;
  /** Where the person goes once done (a safe return_to, checked again when followed). */
  returnTo?: string;
}

/** The state's link field for a factor step that no link opened. */
export const NO_LINK = '';

/** Said when an add-factor ticket is opened outside the browser session that asked for it (DECISIONS 14.6). */
export const OTHER_SESSION =
  'This link adds a factor only in the browser session that asked for it, while it is signed in. Go back to the Security page of the portal and start again.';

export type EnrolmentOutcome =
  /** The link does not work (or no longer): a page that says why. */
  | { kind: 'refused'; message: string }
  /** The password form again, with its error. */
  | { kind: 'password'; userName: string; error: string }
  /**
   * The factor step: an authenticator app (the QR code of `totp.uri`, with `error` after a wrong code)
   * or a passkey (registered for `userId`, with `passkeyError` after a refused answer).
   */
  | {
      kind: 'totp';
      userId: string;
      userName: string;
      state: string;
      totp: OfferedTotp;
      purpose: FactorPurpose;
      error?: string;
      passkeyError?: string;
      passkeyName?: string;
    }
  | { kind: 'locked'; userId: string; userName: string; state: string; totp: OfferedTotp; purpose: FactorPurpose; message: string; retryAfter: string }
  /** Enrolled, and a new session opened (`factor` says which, `returnTo` where to go). */
  | { kind: 'signed-in'; cookieValue: string; session: SignInSession; factor: 'OATH_TOTP' | 'FIDO2'; passkeyName?: string; returnTo?: string }
  /** Enrolled from a live session (purpose `session`, after enrolling a passkey): no new session. */
  | { kind: 'added'; userId: string; userName: string; sessionId: string; factor: 'OATH_TOTP' | 'FIDO2'; passkeyName?: string; returnTo?: string }
  /** An add-factor ticket's factor added (purpose `ticket`): back to the portal's Security page, signed in as before. */
  | { kind: 'factor-added' };

type Factor = { kind: 'OATH_TOTP'; step: number } | { kind: 'FIDO2'; passkey: NewPasskey };

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
    private readonly passkeys: PasskeyCredentials,
    private readonly ceremonies: PasskeyCeremonies,
    private readonly sessions: SignInSessionService,
    private readonly lockout: LockoutService,
    private readonly cipher: DataCipher,
    private readonly audit: AuditLog,
    private readonly db: Database,
    private readonly clock: Clock,
  ) {}

  /**
   * Opening the link: the password step of an enrolment link, or, for a signed-in person's add-factor
   * ticket opened in its own browser session, the factor step at once (DECISIONS 14.6); or why it does not work.
   */
  async open(org: string, link: string | undefined, session: SignInSession | null, formCookie: string): Promise<EnrolmentOutcome> {
    const found = await this.usableLink(org, link, session);
    if ('refused' in found) return { kind: 'refused', message: found.refused };
    if (!found.addFactor) return { kind: 'password', userName: found.user.user_name, error: '' };
    // An add-factor ticket (DECISIONS 14.6): the factor step at once, sealed to the ticket and its session.
    const { user } = found;
    const totp = await this.totp.offer(org, user.user_name);
    const sealed = this.seal(org, formCookie, link!, {
      purpose: 'ticket',
      linkId: found.linkId,
      sessionId: session!.id,
      userId: user.id,
      userName: user.user_name,
      totp,
    });
    return { kind: 'totp', userId: user.id, userName: user.user_name, state: sealed, totp, purpose: 'ticket' };
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
    const totp = await this.totp.offer(org, userName);
    const sealed = this.seal(org, formCookie, link!, { purpose: 'link', linkId, userId: user.id, userName, passwordHash, totp });
    return { kind: 'totp', userId: user.id, userName, state: sealed, totp, purpose: 'link' };
  }

  /**
   * The factor step for a person who is not at their link (DECISIONS 14.5): `mark`, after a right
   * password, for a person an administrator marked who holds no second factor; `session`, for a
   * signed-in person who just enrolled a passkey and may add another (DECISIONS 14.5). Writes nothing.
   */
  async startFactorStep(
    org: string,
    person: { userId: string; userName: string },
    purpose: 'mark' | 'session',
    formCookie: string,
    options: { sessionId?: string; returnTo?: string } = {},
  ): Promise<Extract<EnrolmentOutcome, { kind: 'totp' }>> {
    const totp = await this.totp.offer(org, person.userName);
    const state = this.seal(org, formCookie, NO_LINK, { purpose, userId: person.userId, userName: person.userName, totp, ...options });
    return { kind: 'totp', userId: person.userId, userName: person.userName, state, totp, purpose };
  }

  /** The code step: a right code enrols the person and signs them in, in one transaction. */
  async confirmTotp(
    org: string,
    link: string | undefined,
    stateToken: string | undefined,
    code: string | undefined,
    formCookie: string,
    origin: Origin,
    sessionId?: string,
  ): Promise<EnrolmentOutcome> {
    const resolved = await this.resolve(org, link, stateToken, formCookie, sessionId);
    if ('refused' in resolved) return resolved.refused;
    const { state } = resolved;
    const page = { userId: state.userId, userName: state.userName, state: stateToken!, totp: state.totp, purpose: state.purpose };
    try {
      // Counted before the check, per person, as the login page's code step (DECISIONS 14.1).
      await this.lockout.countCodeAttempt(org, state.userId, state.userName, origin, 'sign_in.lockout');
    } catch (error) {
      if (!(error instanceof OAuthError) || error.status !== 429) throw error;
      const retryAfter = error.headers['Retry-After'] ?? '1';
      return { kind: 'locked', ...page, message: `Too many codes tried. ${retryText(retryAfter)}`, retryAfter };
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
      return { kind: 'totp', ...page, error: 'That code is not right. Check that the app shows this account, and type the code it shows now.' };
    }
    const outcome = await this.complete(org, link, state, { kind: 'OATH_TOTP', step }, origin);
    if (outcome.kind === 'signed-in' || outcome.kind === 'added' || outcome.kind === 'factor-added') await this.lockout.forgetCodeAttempts(org, state.userId);
    return outcome;
  }

  /**
   * The passkey of the factor step (DECISIONS 14.5): the browser's answer to this flow's registration
   * challenge, checked (single-use challenge, origin, RP id, attestation `none`, ES256 or RS256), then
   * enrolled in the same one transaction as a code would be. A refused answer is the step again with
   * its reason, audited as a failed sign-in; nothing is written.
   */
  async confirmPasskey(
    org: string,
    link: string | undefined,
    stateToken: string | undefined,
    answer: string | undefined,
    name: string | undefined,
    formCookie: string,
    origin: Origin,
    sessionId?: string,
  ): Promise<EnrolmentOutcome> {
    const resolved = await this.resolve(org, link, stateToken, formCookie, sessionId);
    if ('refused' in resolved) return resolved.refused;
    const { state } = resolved;
    const page = { userId: state.userId, userName: state.userName, state: stateToken!, totp: state.totp, purpose: state.purpose };
    const passkeyName = (name ?? '').trim();
    if (passkeyName.length === 0 || passkeyName.length > 64 || /\p{Cc}/u.test(passkeyName)) {
      return {
        kind: 'totp',
        ...page,
        passkeyName: passkeyName.slice(0, 64),
        passkeyError: 'Give the passkey a name of 1 to 64 characters, so that you can tell it apart later.',
      };
    }
    const checked = await this.ceremonies.verifyRegistration(org, state.userId, formCookie, answer, passkeyName);
    if (!checked.ok) {
      await this.lockout.recordFailure(lockoutSubject(org, state.userName), origin, `passkey_${checked.refusal}`, {
        org,
        claimed: { text: state.userName, exists: true },
        method: 'passkey',
        actions: { fail: 'sign_in.fail', lockout: 'sign_in.lockout' },
        details: { step: 'enrolment' },
      });
      return { kind: 'totp', ...page, passkeyName, passkeyError: PASSKEY_MESSAGES[checked.refusal] };
    }
    return this.complete(org, link, state, { kind: 'FIDO2', passkey: checked.passkey }, origin);
  }

  /**
   * The sealed state of this flow, checked against its link (purpose `link`), its add-factor ticket and
   * that ticket's live session (purpose `ticket`), or its session (purpose `session`).
   */
  private async resolve(
    org: string,
    link: string | undefined,
    stateToken: string | undefined,
    formCookie: string,
    sessionId: string | undefined,
  ): Promise<{ state: EnrolmentState } | { refused: EnrolmentOutcome }> {
    if (link) {
      const linkState = await this.links.state(org, link);
      if (!linkState.open) return { refused: { kind: 'refused', message: LINK_REFUSALS[linkState.refusal] } };
      const ticket = linkState.purpose === 'add_factor';
      // An add-factor ticket works only in the browser session that asked for it (DECISIONS 14.6).
      if (ticket && (sessionId === undefined || sessionId !== linkState.sessionId)) return { refused: { kind: 'refused', message: OTHER_SESSION } };
      const state = this.unseal(org, formCookie, link, stateToken);
      if (!state || state.purpose !== (ticket ? 'ticket' : 'link') || state.linkId !== linkState.id || state.userId !== linkState.userId) {
        return {
          refused: { kind: 'refused', message: 'This step took too long or did not come from this page. Open your enrolment link again: it still works.' },
        };
      }
      return { state };
    }
    const state = this.unseal(org, formCookie, NO_LINK, stateToken);
    if (!state || state.purpose === 'link' || state.purpose === 'ticket' || (state.purpose === 'session' && state.sessionId !== sessionId)) {
      return { refused: { kind: 'refused', message: 'This step took too long or did not come from this page. Sign in again to add your second factor.' } };
    }
    return { state };
  }

  /**
   * One transaction (DECISIONS 14.4, 14.5, 14.6): the person's row lock; the link used and the
   * password stored (`link`), the ticket used (`ticket`: once), or the administrator's mark cleared
   * (`mark`: of two submissions one wins); the factor enrolled as a credential of the domain; the mark
   * cleared in any case; audited `user.enrolment.complete` (`user.factor.add` for a ticket); a session
   * opened (not for `session` or `ticket`, which have one).
   */
  private async complete(org: string, link: string | undefined, state: EnrolmentState, factor: Factor, origin: Origin): Promise<EnrolmentOutcome> {
    const actor = { name: state.userName, sourceAddress: origin.sourceAddress, correlationId: origin.correlationId };
    const passkeyName = factor.kind === 'FIDO2' ? factor.passkey.name : undefined;
    const outcome = await this.db.transaction(async (tx): Promise<EnrolmentOutcome> => {
      const user = await this.userRows.lockInOrg(org, state.userId, tx);
      if (!user || user.disabled) return { kind: 'refused', message: DISABLED };
      if (state.purpose === 'link' || state.purpose === 'ticket') {
        // Used meanwhile (another tab, the same form twice), replaced or expired: why is read after this transaction.
        if (!(await this.links.use(org, link!, state.userId, tx))) return { kind: 'refused', message: '' };
      }
      if (state.purpose === 'link') await this.users.writePasswordHash(org, user.id, state.passwordHash!, actor, tx);
      const marked = await this.users.clearSecondFactorMark(org, user.id, tx);
      if (state.purpose === 'mark' && !marked) {
        return { kind: 'refused', message: 'Your second factor is enrolled already (in another tab or window). Sign in with it.' };
      }
      const credential =
        factor.kind === 'OATH_TOTP'
          ? await this.totp.enrol(org, user.id, { ...state.totp, step: factor.step }, actor, tx)
          : await this.passkeys.enrol(org, user.id, factor.passkey, actor, tx);
      if (state.purpose === 'ticket') {
        // An add-factor ticket (DECISIONS 14.6): one more factor, nothing else; the password, the other factors and the sessions stay.
        await this.audit.record(
          {
            org,
            actor: actor.name,
            action: 'user.factor.add',
            target: user.id,
            outcome: 'success',
            sourceAddress: actor.sourceAddress,
            correlationId: actor.correlationId,
            details: { link: state.linkId, session: state.sessionId, credential, type: factor.kind, ...(passkeyName ? { name: passkeyName } : {}) },
          },
          tx,
        );
        return { kind: 'factor-added' };
      }
      await this.audit.record(
        {
          org,
          actor: actor.name,
          action: 'user.enrolment.complete',
          target: user.id,
          outcome: 'success',
          sourceAddress: actor.sourceAddress,
          correlationId: actor.correlationId,
          details: { via: state.purpose, ...(state.linkId ? { link: state.linkId } : {}), credential, factor: factor.kind },
        },
        tx,
      );
      if (state.purpose === 'session') {
        return {
          kind: 'added',
          userId: user.id,
          userName: user.user_name,
          sessionId: state.sessionId!,
          factor: factor.kind,
          passkeyName,
          returnTo: state.returnTo,
        };
      }
      const amr = factor.kind === 'OATH_TOTP' ? (['pwd', 'otp'] as const) : (['pwd', 'hwk'] as const);
      const opened = await this.sessions.open({ orgId: org, userId: user.id, userName: user.user_name, amr: [...amr] }, origin, tx);
      return { kind: 'signed-in', ...opened, factor: factor.kind, passkeyName, returnTo: state.returnTo };
    });
    if (outcome.kind === 'refused' && outcome.message === '') {
      const now = await this.links.state(org, link);
      return { kind: 'refused', message: LINK_REFUSALS[now.open ? 'used' : now.refusal] };
    }
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
