import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { AuditLog } from '@app/audit';
import { Actor, Clock, notFound } from '@app/common';
import { AppConfig } from '@app/config';
import { Transaction } from '@app/persistence';
import { EnrolmentLinkPurpose, EnrolmentLinkRepository } from './enrolment-link.repository';
import { UserRepository } from './user.repository';
import { UserService } from './user.service';

/** 256 random bits, base64url: the secret part of an enrolment link. */
const TOKEN_BYTES = 32;
export const ENROLMENT_TOKEN_PATTERN = /^[A-Za-z0-9_-]{43}$/;
/** How long a signed-in person's add-factor ticket works (DECISIONS 14.6): long enough to find the phone, not a day. */
export const ADD_FACTOR_TICKET_LIFETIME_S = 600;
export type { EnrolmentLinkPurpose };

/** A link just made: its URL is shown once (the terminal, the bootstrap credentials file, the API's answer) and never stored. */
export interface IssuedEnrolmentLink {
  url: string;
  expiresAt: Date;
  userId: string;
  userName: string;
}

/** Why a link does not open: each says what to do next. */
export type EnrolmentLinkRefusal = 'unknown' | 'used' | 'replaced' | 'expired';

export type EnrolmentLinkState =
  | { open: true; id: string; userId: string; userName: string; expiresAt: Date; purpose: EnrolmentLinkPurpose; sessionId: string | null }
  | { open: false; refusal: EnrolmentLinkRefusal };

/**
 * A person's one-time enrolment link (DECISIONS 14.4): a page of the hosted login where they choose a
 * password and enrol a second factor, then are signed in. Bound to the person, single use, it
 * expires (ENROLMENT_LINK_LIFETIME_S), and making a new one replaces the person's open link in the
 * same transaction (a partial unique index holds one open link per person). Only the SHA-256 of its
 * 256 random bits is stored. Made under the grant rules of a change of the person's credential
 * (DECISIONS 5.3, through UserService.withCredentialLock) and audited (`user.enrolment_link.create`).
 */
@Injectable()
export class EnrolmentLinks {
  constructor(
    private readonly links: EnrolmentLinkRepository,
    private readonly users: UserService,
    private readonly userRows: UserRepository,
    private readonly audit: AuditLog,
    private readonly clock: Clock,
    private readonly config: AppConfig,
  ) {}

  async issue(orgId: string, userId: string, actor: Actor): Promise<IssuedEnrolmentLink> {
    return this.users.withCredentialLock(orgId, userId, actor, (user, tx) => this.issueWithin(orgId, user, actor, tx));
  }

  /**
   * Makes the link in the caller's transaction, which holds the person's row lock and has checked the
   * grant rules (an administrator's reset of the person's factors does both with more in it).
   */
  async issueWithin(orgId: string, user: { id: string; user_name: string }, actor: Actor, tx: Transaction): Promise<IssuedEnrolmentLink> {
    const token = randomBytes(TOKEN_BYTES).toString('base64url');
    const now = this.clock.now();
    const expiresAt = new Date(now.getTime() + this.config.enrolmentLinkLifetimeS * 1000);
    const replaced = await this.links.replaceOpen(user.id, now, tx);
    const id = randomUUID();
    await this.links.insert({ id, orgId, userId: user.id, tokenHash: hashOf(token), createdBy: actor.name, createdAt: now, expiresAt }, tx);
    await this.audit.record(
      {
        org: orgId,
        actor: actor.name,
        action: 'user.enrolment_link.create',
        target: user.id,
        outcome: 'success',
        sourceAddress: actor.sourceAddress,
        correlationId: actor.correlationId,
        details: { userName: user.user_name, link: id, expiresAt: expiresAt.toISOString(), ...(replaced > 0 ? { replaced } : {}) },
      },
      tx,
    );
    return { url: this.url(orgId, token), expiresAt, userId: user.id, userName: user.user_name };
  }

  /**
   * A signed-in person's add-factor ticket (DECISIONS 14.6): an enrolment link of purpose
   * `add_factor` that opens the factor step only (no password), works for ADD_FACTOR_TICKET_LIFETIME_S
   * and only in the browser session `sessionId` (the page checks the session cookie), once. Made in the
   * caller's transaction, which holds the person's row lock; replaces their open ticket, never their
   * enrolment link. Audited `user.enrolment_link.create` with `purpose: add_factor`.
   */
  async issueAddFactorWithin(
    orgId: string,
    user: { id: string; user_name: string },
    sessionId: string,
    actor: Actor,
    tx: Transaction,
  ): Promise<IssuedEnrolmentLink> {
    const token = randomBytes(TOKEN_BYTES).toString('base64url');
    const now = this.clock.now();
    const expiresAt = new Date(now.getTime() + ADD_FACTOR_TICKET_LIFETIME_S * 1000);
    const replaced = await this.links.replaceOpen(user.id, now, tx, 'add_factor');
    const id = randomUUID();
    await this.links.insert(
      { id, orgId, userId: user.id, tokenHash: hashOf(token), createdBy: actor.name, createdAt: now, expiresAt, purpose: 'add_factor', sessionId },
      tx,
    );
    await this.audit.record(
      {
        org: orgId,
        actor: actor.name,
        action: 'user.enrolment_link.create',
        target: user.id,
        outcome: 'success',
        sourceAddress: actor.sourceAddress,
        correlationId: actor.correlationId,
        details: {
          userName: user.user_name,
          link: id,
          purpose: 'add_factor',
          session: sessionId,
          expiresAt: expiresAt.toISOString(),
          ...(replaced > 0 ? { replaced } : {}),
        },
      },
      tx,
    );
    return { url: this.url(orgId, token), expiresAt, userId: user.id, userName: user.user_name };
  }

  /** `issue` for the user with this userName (the command line names people as people do). */
  async issueByUserName(orgId: string, userName: string, actor: Actor): Promise<IssuedEnrolmentLink> {
    const user = await this.userRows.findByUserName(orgId, userName);
    if (!user) throw notFound(`There is no user "${userName}" in organization "${orgId}".`);
    return this.issue(orgId, user.id, actor);
  }

  /** What the link at `token` is now (read only: opening the page uses nothing). */
  async state(orgId: string, token: string | undefined): Promise<EnrolmentLinkState> {
    if (!token || !ENROLMENT_TOKEN_PATTERN.test(token)) return { open: false, refusal: 'unknown' };
    const row = await this.links.findByHash(orgId, hashOf(token));
    if (!row) return { open: false, refusal: 'unknown' };
    if (row.used_at) return { open: false, refusal: 'used' };
    if (row.replaced_at) return { open: false, refusal: 'replaced' };
    if (row.expires_at.getTime() <= this.clock.now().getTime()) return { open: false, refusal: 'expired' };
    return {
      open: true,
      id: row.id,
      userId: row.user_id,
      userName: row.user_name,
      expiresAt: row.expires_at,
      purpose: row.purpose,
      sessionId: row.session_id,
    };
  }

  /** Uses the person's link in the caller's transaction; false when it is no longer theirs to use (used meanwhile, replaced, expired). */
  async use(orgId: string, token: string, userId: string, tx: Transaction): Promise<boolean> {
    if (!ENROLMENT_TOKEN_PATTERN.test(token)) return false;
    return (await this.links.use(orgId, hashOf(token), userId, this.clock.now(), tx)) !== undefined;
  }

  private url(orgId: string, token: string): string {
    return `${this.config.authBaseUrl}/authentication/customer/${encodeURIComponent(orgId)}/enrol/${token}`;
  }
}

function hashOf(token: string): Buffer {
  return createHash('sha256').update(token, 'utf8').digest();
}
