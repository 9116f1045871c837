import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { AuditLog, byActor } from '@app/audit';
import { Actor, Clock, RequestOrigin, isUuid } from '@app/common';
import { AppConfig } from '@app/config';
import { Database, Transaction } from '@app/persistence';
import { AuthorizationGrantRepository } from '../oidc/authorization-grant.repository';
import { LiveSessionRow, SessionEndReason, SignInSessionRepository } from './sign-in-session.repository';
import { AuthenticationMethod, SESSION_COOKIE, SignInSession, SignInSessions } from './sign-in-sessions';

/** 256 random bits per cookie (the issue asks for at least 128), base64url: 43 characters. */
const SECRET_BYTES = 32;
const COOKIE_VALUE = /^[A-Za-z0-9_-]{43}$/;
/**
 * A busy session slides its idle expiry at most once a minute, not at every request, and at most
 * once a tenth of the idle timeout when that is shorter: with the 60 s minimum a session used every
 * 30 s would otherwise never slide, and end 60 s after its sign-in (DECISIONS 14.2).
 */
export function touchIntervalMs(idleTimeoutS: number): number {
  return Math.min(60_000, (idleTimeoutS * 1000) / 10);
}
/** Ended and expired rows are the record of who was signed in when; kept this long past their absolute expiry. */
const KEEP_ENDED_MS = 30 * 24 * 3600 * 1000;
/** What the row keeps of the browser's User-Agent, to tell the person's sessions apart in their list. */
const MAX_USER_AGENT = 256;

/** Who signs in, as the login page proved it. */
export interface SignedInPerson {
  orgId: string;
  userId: string;
  userName: string;
  amr: AuthenticationMethod[];
  /** The smart card's certificate serial (hex), so that revoking it ends the session. */
  certificateSerial?: string;
}

/** A session as its list shows it: never the cookie or its hash. */
export interface SessionSummary {
  id: string;
  amr: AuthenticationMethod[];
  authTime: Date;
  createdAt: Date;
  lastSeenAt: Date;
  idleExpiresAt: Date;
  absoluteExpiresAt: Date;
  sourceAddress: string | null;
  userAgent: string | null;
}

/**
 * People's browser sessions (DECISIONS 14.2), the SignInSessions port others read. The database row
 * is the truth: every request with the cookie reads it (one indexed statement, joined with the user
 * so that a disabled user's session answers nothing at once), so an ended session is ended on every
 * instance with its commit, without any cache to invalidate. However a session ends, the grants that
 * applications hold through it (not offline ones) are revoked in the same transaction, with their
 * access tokens (`endedWithGrants`).
 */
@Injectable()
export class SignInSessionService extends SignInSessions {
  constructor(
    private readonly sessions: SignInSessionRepository,
    private readonly grants: AuthorizationGrantRepository,
    private readonly db: Database,
    private readonly audit: AuditLog,
    private readonly clock: Clock,
    private readonly config: AppConfig,
  ) {
    super();
  }

  async fromRequest(request: FastifyRequest): Promise<SignInSession | null> {
    const value = readCookie(request.headers.cookie, SESSION_COOKIE);
    if (!value || !COOKIE_VALUE.test(value)) return null;
    const now = this.clock.now();
    const row = await this.sessions.findLive(hashOf(value), now);
    if (!row) return null;
    let idleExpiresAt = row.idle_expires_at;
    const interval = touchIntervalMs(this.config.sessionIdleTimeoutS);
    if (now.getTime() - row.last_seen_at.getTime() >= interval) {
      idleExpiresAt = (await this.sessions.touch(row.id, now, this.config.sessionIdleTimeoutS * 1000, interval)) ?? idleExpiresAt;
    }
    return { ...sessionOf(row), idleExpiresAt };
  }

  /**
   * Opens a new session (a new id and secret at every sign-in: no fixation) and audits the sign-in;
   * answers the cookie's value, which exists nowhere else.
   */
  /** Opens a session; in `tx` when given (the enrolment page opens it with the commit that enrols the person, DECISIONS 14.4). */
  async open(
    person: SignedInPerson,
    origin: RequestOrigin & { userAgent?: string },
    within?: Transaction,
  ): Promise<{ cookieValue: string; session: SignInSession }> {
    const now = this.clock.now();
    const secret = randomBytes(SECRET_BYTES).toString('base64url');
    const id = randomUUID();
    const absoluteExpiresAt = new Date(now.getTime() + this.config.sessionAbsoluteTimeoutS * 1000);
    const idleExpiresAt = new Date(Math.min(now.getTime() + this.config.sessionIdleTimeoutS * 1000, absoluteExpiresAt.getTime()));
    const write = async (tx: Transaction) => {
      await this.sessions.insert(
        {
          id,
          orgId: person.orgId,
          userId: person.userId,
          secretHash: hashOf(secret),
          amr: person.amr,
          authTime: now,
          createdAt: now,
          idleExpiresAt,
          absoluteExpiresAt,
          sourceAddress: origin.sourceAddress,
          userAgent: origin.userAgent?.slice(0, MAX_USER_AGENT) ?? null,
          certificateSerial: person.certificateSerial ?? null,
        },
        tx,
      );
      await this.audit.record(
        {
          org: person.orgId,
          actor: person.userName,
          action: 'sign_in.success',
          target: person.userId,
          outcome: 'success',
          sourceAddress: origin.sourceAddress,
          correlationId: origin.correlationId,
          details: { session: id, amr: person.amr, ...(person.certificateSerial ? { certificateSerial: person.certificateSerial } : {}) },
        },
        tx,
      );
    };
    if (within) await write(within);
    else await this.db.transaction(write);
    return {
      cookieValue: secret,
      session: { id, org: person.orgId, userId: person.userId, userName: person.userName, authTime: now, amr: person.amr, idleExpiresAt, absoluteExpiresAt },
    };
  }

  /**
   * Ends one session at once (the row is the truth on every instance). `reason` logout when the
   * person signs out (or a relying party logs them out), administrator when an administrator ends
   * it; the person ending another of their own sessions from its list is a logout of that session.
   * Answers how many grants were revoked with it (0 also when it was no longer live).
   */
  async end(sessionId: string, actor: Actor, reason: Extract<SessionEndReason, 'logout' | 'administrator'> = 'logout', orgId?: string): Promise<number> {
    return (await this.endOne(sessionId, actor, reason, orgId))?.revokedGrants ?? 0;
  }

  /**
   * As `end`; answers the grants revoked with the session, or undefined when no live session (of
   * `ownerId`, when given) was ended: unknown, another's, already ended or expired.
   */
  async endOne(
    sessionId: string,
    actor: Actor,
    reason: Extract<SessionEndReason, 'logout' | 'administrator'>,
    orgId?: string,
    inTransaction?: Transaction,
    ownerId?: string,
  ): Promise<{ revokedGrants: number } | undefined> {
    if (!isUuid(sessionId)) return undefined;
    const now = this.clock.now();
    const work = async (tx: Transaction) => {
      const org = orgId ?? (await this.orgOf(sessionId, tx));
      if (!org) return undefined;
      const ended = await this.sessions.end(org, sessionId, reason, now, tx, ownerId);
      if (!ended) return undefined;
      const revokedGrants = await this.endedWithGrants([sessionId], reason, now, tx);
      await this.audit.record(
        {
          org,
          ...byActor(actor),
          action: reason === 'logout' ? 'sign_in.logout' : 'session.end',
          target: ended.user_id,
          outcome: 'success',
          details: { session: sessionId, reason, ...grantsNote(revokedGrants) },
        },
        tx,
      );
      return { revokedGrants };
    };
    return inTransaction ? work(inTransaction) : this.db.transaction(work);
  }

  /** Each user's last sign-in at the login page, as far as the record of sessions goes back (KEEP_ENDED_MS past their end). */
  lastSignIns(orgId: string, userIds: readonly string[]): Promise<Map<string, Date>> {
    return this.sessions.lastSignIns(orgId, userIds.filter(isUuid));
  }

  /** A user's live sessions, newest first (their own list, or an administrator's view). */
  async listOfUser(orgId: string, userId: string): Promise<SessionSummary[]> {
    const rows = await this.sessions.listLiveOfUser(orgId, userId, this.clock.now());
    return rows.map(summaryOf);
  }

  /**
   * Ends every live session of a user (but `exceptId`, the person's own current one when they end
   * all others), in `tx` when given (the change that ends them: a disable, a password change), and
   * audits one event naming them; answers their ids.
   */
  async endAllOfUser(orgId: string, userId: string, reason: SessionEndReason, actor: Actor, tx?: Transaction, exceptId?: string): Promise<string[]> {
    const work = async (t: Transaction) => {
      const now = this.clock.now();
      const ended = await this.sessions.endAllOfUser(userId, reason, now, t, exceptId);
      if (ended.length > 0) {
        const revokedGrants = await this.endedWithGrants(ended, reason, now, t);
        await this.audit.record(
          {
            org: orgId,
            ...byActor(actor),
            // The person ending their own other sessions signs out of them (DECISIONS 14.1, 14.6).
            action: reason === 'logout' ? 'sign_in.logout' : 'session.end',
            target: userId,
            outcome: 'success',
            details: { reason, sessions: ended, ...grantsNote(revokedGrants) },
          },
          t,
        );
      }
      return ended;
    };
    return tx ? work(tx) : this.db.transaction(work);
  }

  /**
   * Ends the smart-card sessions opened with certificates that were revoked or put on hold, in the
   * transaction that changed them (credential management's device moves, superseding issuance and a
   * CA generation's revocation), in one statement however many; one `session.end` per person and certificate.
   */
  async endAllOfCertificates(orgId: string, serials: readonly string[], actor: Actor, tx?: Transaction): Promise<number> {
    if (serials.length === 0) return 0;
    const work = async (t: Transaction) => {
      const now = this.clock.now();
      const ended = await this.sessions.endAllOfCertificates(orgId, serials, now, t);
      await this.endedWithGrants(
        ended.map((e) => e.id),
        'certificate_revoked',
        now,
        t,
      );
      const byUserAndSerial = new Map<string, { userId: string; serial: string; sessions: string[] }>();
      for (const e of ended) {
        const key = `${e.user_id}/${e.certificate_serial}`;
        const entry = byUserAndSerial.get(key) ?? { userId: e.user_id, serial: e.certificate_serial, sessions: [] };
        entry.sessions.push(e.id);
        byUserAndSerial.set(key, entry);
      }
      for (const { userId, serial, sessions } of byUserAndSerial.values()) {
        await this.audit.record(
          {
            org: orgId,
            ...byActor(actor),
            action: 'session.end',
            target: userId,
            outcome: 'success',
            details: { reason: 'certificate_revoked', certificateSerial: serial, sessions },
          },
          t,
        );
      }
      return ended.length;
    };
    return tx ? work(tx) : this.db.transaction(work);
  }

  /**
   * Ends the sessions opened with a password alone in an organization that no longer allows it
   * (`passwordOnlySignIn` turned off), in the transaction of the settings change; one `session.end`
   * per person, written together. Answers how many sessions ended.
   */
  async endAllPasswordOnly(orgId: string, actor: Actor, tx: Transaction): Promise<number> {
    const now = this.clock.now();
    const ended = await this.sessions.endAllPasswordOnly(orgId, now, tx);
    await this.endedWithGrants(
      ended.map((e) => e.id),
      'sign_in_policy',
      now,
      tx,
    );
    const byUser = new Map<string, string[]>();
    for (const { id, user_id } of ended) byUser.set(user_id, [...(byUser.get(user_id) ?? []), id]);
    await this.audit.recordMany(
      [...byUser].map(([userId, sessions]) => ({
        org: orgId,
        ...byActor(actor),
        action: 'session.end',
        target: userId,
        outcome: 'success',
        details: { reason: 'sign_in_policy', setting: 'passwordOnlySignIn', sessions },
      })),
      tx,
    );
    return ended.length;
  }

  /**
   * Revokes what applications hold through sessions just ended, in the transaction that ended them:
   * the grants whose refresh tokens were bound to them (offline ones live on: DECISIONS 15.5) and
   * the access tokens issued from those grants, on every instance (DECISIONS 14.2). Answers how many grants.
   */
  private endedWithGrants(sessionIds: string[], reason: SessionEndReason, now: Date, tx: Transaction): Promise<number> {
    return this.grants.revokeForSessions(sessionIds, `session_${reason}`, now, tx);
  }

  purgeExpired(): Promise<number> {
    return this.sessions.purge(this.clock.now(), KEEP_ENDED_MS);
  }

  private async orgOf(sessionId: string, tx: Transaction): Promise<string | undefined> {
    const [row] = await this.db.query<{ org_id: string }>('SELECT org_id FROM sign_in_sessions WHERE id = $1', [sessionId], tx);
    return row?.org_id;
  }
}

/** The audit detail of grants revoked with a session, only when there were any. */
function grantsNote(revokedGrants: number): { revokedGrants?: number } {
  return revokedGrants > 0 ? { revokedGrants } : {};
}

function hashOf(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}

function sessionOf(row: LiveSessionRow): SignInSession {
  return {
    id: row.id,
    org: row.org_id,
    userId: row.user_id,
    userName: row.user_name,
    authTime: row.auth_time,
    amr: row.amr,
    idleExpiresAt: row.idle_expires_at,
    absoluteExpiresAt: row.absolute_expires_at,
  };
}

function summaryOf(row: LiveSessionRow): SessionSummary {
  return {
    id: row.id,
    amr: row.amr,
    authTime: row.auth_time,
    createdAt: row.created_at,
    lastSeenAt: row.last_seen_at,
    idleExpiresAt: row.idle_expires_at,
    absoluteExpiresAt: row.absolute_expires_at,
    sourceAddress: row.source_address,
    userAgent: row.user_agent,
  };
}

/** The value of one cookie in a Cookie header (RFC 6265 5.4), or undefined; a cookie named twice counts as absent. */
export function readCookie(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  const values = header
    .split(';')
    .map((pair) => pair.trim())
    .filter((pair) => pair.startsWith(`${name}=`))
    .map((pair) => pair.slice(name.length + 1));
  return values.length === 1 ? values[0] : undefined;
}
