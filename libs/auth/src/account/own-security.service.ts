import { Injectable } from '@nestjs/common';
import { EnrolmentLinks, IssuedEnrolmentLink, OrganizationService, UserRepository } from '@app/accounts';
import { AuditAction, AuditLog } from '@app/audit';
import { Actor, Clock, DomainError, Principal, forbidden, isUuid, notFound, parseBody, z } from '@app/common';
import { Database, Transaction } from '@app/persistence';
import { SignInFactorPolicy } from '../grants/sign-in-factor.policy';
import { SessionSummary, SignInSessionService } from '../sessions/sign-in-session.service';
import { SignInSession } from '../sessions/sign-in-sessions';
import { OwnFactor, SignInFactors } from './sign-in-factors';

/**
 * How recent a sign-in must be to add or remove a second factor (DECISIONS 14.6): the session's
 * `auth_time`, the same the authorization endpoint's `max_age` reads (15.2). An older session signs in
 * again on the login page with `prompt=login`.
 */
export const RECENT_SIGN_IN_S = 300;

/** A factor as its list shows it: with whether it may be removed here, and why not. */
export interface ListedFactor extends OwnFactor {
  removable: boolean;
  /** Why it may not be removed (said beside the disabled button); null when it may. */
  removalRefusal: string | null;
}

const LAST_FACTOR = 'This is your last second factor, and your account needs one to sign in. Add another factor first, then remove this one.';
const ON_CARD = 'This factor is on a card; your help desk revokes a card with everything on it.';

const renameSchema = z
  .object({
    name: z
      .string({ error: 'name must be a string of 1 to 64 characters' })
      .transform((value) => value.trim())
      .pipe(
        z
          .string()
          .min(1, 'name must have 1 to 64 characters (not only spaces)')
          .max(64, 'name must have at most 64 characters')
          // eslint-disable-next-line no-control-regex
          .refine((value) => !/[\u0000-\u001f\u007f]/.test(value), 'name must not hold control characters'),
      ),
  })
  .strict();

/**
 * A person's own sign-in security (DECISIONS 14.6): their second factors (listed, renamed, removed,
 * never the last one while they need one; a new one added through an add-factor ticket of the hosted
 * enrolment page) and their browser sessions (listed, ended one by one or all but this one). Every
 * change holds the person's row lock, so two removals at once cannot both pass the last-factor rule.
 */
@Injectable()
export class OwnSecurityService {
  constructor(
    private readonly factors: SignInFactors,
    private readonly sessions: SignInSessionService,
    private readonly links: EnrolmentLinks,
    private readonly users: UserRepository,
    private readonly organizations: OrganizationService,
    private readonly policy: SignInFactorPolicy,
    private readonly audit: AuditLog,
    private readonly db: Database,
    private readonly clock: Clock,
  ) {}

  async listFactors(principal: Principal): Promise<ListedFactor[]> {
    const userId = personOf(principal);
    const [factors, required] = await Promise.all([this.factors.list(principal.org, userId), this.secondFactorRequired(principal.org, userId)]);
    return listed(factors, required);
  }

  async renameFactor(principal: Principal, id: string, body: unknown, actor: Actor): Promise<ListedFactor> {
    const userId = personOf(principal);
    const { name } = parseBody(renameSchema, body);
    return this.db.transaction(async (tx) => {
      await this.lockPerson(principal.org, userId, tx);
      const renamed = isUuid(id) ? await this.factors.rename(principal.org, userId, id, name, actor, tx) : undefined;
      if (!renamed) throw unknownFactor(id);
      await this.record(principal, actor, 'user.factor.rename', { credential: id, type: renamed.type, name }, tx);
      const all = listed(await this.factors.list(principal.org, userId, tx), await this.secondFactorRequired(principal.org, userId, tx));
      return all.find((factor) => factor.id === id)!;
    });
  }

  /** Revokes one factor; 409 when it is the last active one and the person needs a second factor. */
  async removeFactor(principal: Principal, session: SignInSession | null, id: string, actor: Actor): Promise<void> {
    const userId = personOf(principal);
    this.assertRecentSignIn(session, 'remove a second factor');
    await this.db.transaction(async (tx) => {
      await this.lockPerson(principal.org, userId, tx);
      const all = await this.factors.list(principal.org, userId, tx);
      const factor = all.find((candidate) => candidate.id === id);
      if (!factor) throw unknownFactor(id);
      if (factor.onCard) throw new DomainError('CONFLICT', ON_CARD);
      const othersActive = all.filter((other) => other.id !== id && other.status === 'ISSUED').length;
      if (factor.status === 'ISSUED' && othersActive === 0 && (await this.secondFactorRequired(principal.org, userId, tx)))
        throw new DomainError('CONFLICT', LAST_FACTOR);
      const removal = await this.factors.remove(principal.org, userId, id, actor, tx);
      if (removal.kind === 'not-found') throw unknownFactor(id);
      if (removal.kind === 'on-card') throw new DomainError('CONFLICT', ON_CARD);
      await this.record(principal, actor, 'user.factor.remove', { credential: id, type: factor.type, name: factor.name, device: removal.revokedDevice }, tx);
    });
  }

  /**
   * Starts adding a factor: a one-time add-factor ticket for the hosted enrolment page's factor step,
   * bound to this person and this browser session (DECISIONS 14.6). Needs a recent sign-in.
   */
  async startAddFactor(principal: Principal, session: SignInSession | null, actor: Actor): Promise<IssuedEnrolmentLink> {
    const userId = personOf(principal);
    const current = this.assertRecentSignIn(session, 'add a second factor');
    return this.db.transaction(async (tx) => {
      const user = await this.lockPerson(principal.org, userId, tx);
      return this.links.issueAddFactorWithin(principal.org, user, current.id, actor, tx);
    });
  }

  listSessions(principal: Principal): Promise<SessionSummary[]> {
    return this.sessions.listOfUser(principal.org, personOf(principal));
  }

  /** Ends one of the person's other sessions; the one the request came with is ended by signing out. */
  async endSession(principal: Principal, sessionId: string, actor: Actor): Promise<void> {
    const userId = personOf(principal);
    if (sessionId === principal.sessionId) {
      throw new DomainError(
        'CONFLICT',
        'This is the session this request came with; sign out instead (POST /credential-management/customer/{org}/whoami/sign-out).',
      );
    }
    const ended = await this.sessions.endOne(sessionId, actor, 'logout', principal.org, undefined, userId);
    if (!ended) throw notFound(`You have no live session ${sessionId}.`);
  }

  /** Ends every live session of the person but the one the request came with (all of them for a bearer token). */
  endOtherSessions(principal: Principal, actor: Actor): Promise<string[]> {
    return this.sessions.endAllOfUser(principal.org, personOf(principal), 'logout', actor, undefined, principal.sessionId);
  }

  /**
   * Whether the person needs a second factor to sign in with their password (the rule of the login
   * page, DECISIONS 14.1): everyone but a cardholder in an organization that allows the password alone.
   */
  private async secondFactorRequired(orgId: string, userId: string, tx?: Transaction): Promise<boolean> {
    const [user, organization] = await Promise.all([this.users.findInOrg(orgId, userId, tx), this.organizations.get(orgId)]);
    if (!user) throw notFound('Your account no longer exists.');
    return this.policy.secondStep(user, { holdsOneTimeCode: false, passwordOnlyAllowed: organization.settings.passwordOnlySignIn }).kind !== 'none';
  }

  private async lockPerson(orgId: string, userId: string, tx: Transaction): Promise<{ id: string; user_name: string }> {
    const user = await this.users.lockInOrg(orgId, userId, tx);
    if (!user) throw notFound('Your account no longer exists.');
    return user;
  }

  /** The re-authentication rule (DECISIONS 14.6): a browser session whose sign-in is at most RECENT_SIGN_IN_S old. */
  private assertRecentSignIn(session: SignInSession | null, what: string): SignInSession {
    if (!session) {
      throw forbidden(
        `To ${what} you must be signed in at the hosted login page in this browser (a session cookie), not with a token: the service asks for your password and code again first.`,
      );
    }
    const age = (this.clock.now().getTime() - session.authTime.getTime()) / 1000;
    if (age > RECENT_SIGN_IN_S) {
      throw forbidden(
        `To ${what} you must have signed in within the last ${RECENT_SIGN_IN_S / 60} minutes; sign in again (the login page with prompt=login) and try again.`,
      );
    }
    return session;
  }

  private async record(principal: Principal, actor: Actor, action: AuditAction, details: Record<string, unknown>, tx: Transaction): Promise<void> {
    await this.audit.record(
      {
        org: principal.org,
        actor: actor.name,
        action,
        target: principal.subjectId,
        outcome: 'success',
        sourceAddress: actor.sourceAddress,
        correlationId: actor.correlationId,
        details,
      },
      tx,
    );
  }
}

/** Whose factors: a person's (a system account has none, and is told what to use instead). */
function personOf(principal: Principal): string {
  if (principal.kind !== 'user') {
    throw forbidden(`Second factors and sessions are a person's; "${principal.name}" is a system account.`);
  }
  return principal.subjectId;
}

function unknownFactor(id: string): DomainError {
  return notFound(`You have no second factor ${String(id).slice(0, 64)}.`);
}

/** Each factor with whether it may be removed: never the last active one while a second factor is required, never one on a card. */
function listed(factors: OwnFactor[], required: boolean): ListedFactor[] {
  const active = factors.filter((factor) => factor.status === 'ISSUED').length;
  return factors.map((factor) => {
    const last = required && factor.status === 'ISSUED' && active <= 1;
    const refusal = factor.onCard ? ON_CARD : last ? LAST_FACTOR : null;
    return { ...factor, removable: refusal === null, removalRefusal: refusal };
  });
}
