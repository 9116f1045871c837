import { Injectable } from '@nestjs/common';
import { Database, Transaction, prepared } from '@app/persistence';
import type { AuthenticationMethod } from './sign-in-sessions';

/** Why a session ended before its expiry (the row's end_reason). */
export type SessionEndReason = 'logout' | 'administrator' | 'user_disabled' | 'password_changed' | 'certificate_revoked' | 'sign_in_policy';

export interface NewSessionRow {
  id: string;
  orgId: string;
  userId: string;
  secretHash: Buffer;
  amr: AuthenticationMethod[];
  authTime: Date;
  createdAt: Date;
  idleExpiresAt: Date;
  absoluteExpiresAt: Date;
  sourceAddress: string | null;
  userAgent: string | null;
  certificateSerial: string | null;
}

/** A live session as a request sees it: the row and its user's name. */
export interface LiveSessionRow {
  id: string;
  org_id: string;
  user_id: string;
  user_name: string;
  amr: AuthenticationMethod[];
  auth_time: Date;
  created_at: Date;
  last_seen_at: Date;
  idle_expires_at: Date;
  absolute_expires_at: Date;
  source_address: string | null;
  user_agent: string | null;
}

const LIVE_COLUMNS = `s.id, s.org_id, s.user_id, u.user_name, s.amr, s.auth_time, s.created_at, s.last_seen_at, s.idle_expires_at,
  s.absolute_expires_at, s.source_address, s.user_agent`;

/**
 * The session a cookie names, if live: not ended, within both expiries, its user enabled. One indexed
 * statement on every request that carries the cookie; the row is the truth on every instance.
 */
const FIND_LIVE = prepared(
  'sign-in-session-find-live',
  `SELECT ${LIVE_COLUMNS}
     FROM sign_in_sessions s JOIN users u ON u.id = s.user_id
    WHERE s.secret_hash = $1 AND s.ended_at IS NULL AND s.idle_expires_at > $2 AND s.absolute_expires_at > $2 AND NOT u.disabled`,
);

/** People's browser sessions (DECISIONS 14.2): only the SHA-256 of the cookie's value is stored. */
@Injectable()
export class SignInSessionRepository {
  constructor(private readonly db: Database) {}

  async insert(row: NewSessionRow, tx?: Transaction): Promise<void> {
    await this.db.query(
      `INSERT INTO sign_in_sessions (id, org_id, user_id, secret_hash, amr, auth_time, created_at, last_seen_at, idle_expires_at,
                                     absolute_expires_at, source_address, user_agent, certificate_serial)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $7, $8, $9, $10, $11, $12)`,
      [
        row.id,
        row.orgId,
        row.userId,
        row.secretHash,
        row.amr,
        row.authTime,
        row.createdAt,
        row.idleExpiresAt,
        row.absoluteExpiresAt,
        row.sourceAddress,
        row.userAgent,
        row.certificateSerial,
      ],
      tx,
    );
  }

  async findLive(secretHash: Buffer, now: Date): Promise<LiveSessionRow | undefined> {
    const [row] = await this.db.query<LiveSessionRow>(FIND_LIVE, [secretHash, now]);
    return row;
  }

  /**
   * Slides the idle expiry (never past the absolute one). Only when the last slide is at least
   * `minIntervalMs` old, so that a busy session writes at most once per interval.
   */
  async touch(id: string, now: Date, idleTimeoutMs: number, minIntervalMs: number): Promise<Date | undefined> {
    const [row] = await this.db.query<{ idle_expires_at: Date }>(
      `UPDATE sign_in_sessions
          SET last_seen_at = $2, idle_expires_at = LEAST($2::timestamptz + make_interval(secs => $3::double precision / 1000), absolute_expires_at)
        WHERE id = $1 AND ended_at IS NULL AND last_seen_at <= $2::timestamptz - make_interval(secs => $4::double precision / 1000)
        RETURNING idle_expires_at`,
      [id, now, idleTimeoutMs, minIntervalMs],
    );
    return row?.idle_expires_at;
  }

  /**
   * Ends one live session of the organization (of `userId` only, when given); answers it (with its
   * user), or undefined when none was live.
   */
  async end(
    orgId: string,
    id: string,
    reason: SessionEndReason,
    now: Date,
    tx?: Transaction,
    userId?: string,
  ): Promise<{ id: string; user_id: string } | undefined> {
    const [row] = await this.db.query<{ id: string; user_id: string }>(
      `UPDATE sign_in_sessions SET ended_at = $3, end_reason = $4
        WHERE org_id = $1 AND id = $2 AND ended_at IS NULL AND absolute_expires_at > $3 AND idle_expires_at > $3
          AND ($5::uuid IS NULL OR user_id = $5::uuid)
        RETURNING id, user_id`,
      [orgId, id, now, reason, userId ?? null],
      tx,
    );
    return row;
  }

  /** Ends every live session of a user (but `exceptId`); answers their ids. */
  async endAllOfUser(userId: string, reason: SessionEndReason, now: Date, tx?: Transaction, exceptId?: string): Promise<string[]> {
    const rows = await this.db.query<{ id: string }>(
      `UPDATE sign_in_sessions SET ended_at = $3, end_reason = $2
        WHERE user_id = $1 AND ended_at IS NULL AND absolute_expires_at > $3 AND idle_expires_at > $3
          AND ($4::uuid IS NULL OR id <> $4::uuid)
        RETURNING id`,
      [userId, reason, now, exceptId ?? null],
      tx,
    );
    return rows.map((r) => r.id);
  }

  /** Ends every live session opened with a smart card whose certificate is one of `serials` of the organization's CA. */
  async endAllOfCertificates(
    orgId: string,
    serials: readonly string[],
    now: Date,
    tx?: Transaction,
  ): Promise<{ id: string; user_id: string; certificate_serial: string }[]> {
    return this.db.query<{ id: string; user_id: string; certificate_serial: string }>(
      `UPDATE sign_in_sessions SET ended_at = $3, end_reason = 'certificate_revoked'
        WHERE org_id = $1 AND certificate_serial = ANY($2::text[]) AND ended_at IS NULL AND absolute_expires_at > $3
        RETURNING id, user_id, certificate_serial`,
      [orgId, serials, now],
      tx,
    );
  }

  /**
   * Ends every live session of the organization opened with a password alone (amr exactly `pwd`),
   * through the partial index that holds only those; answers them with their users.
   */
  async endAllPasswordOnly(orgId: string, now: Date, tx?: Transaction): Promise<{ id: string; user_id: string }[]> {
    return this.db.query<{ id: string; user_id: string }>(
      `UPDATE sign_in_sessions SET ended_at = $2, end_reason = 'sign_in_policy'
        WHERE org_id = $1 AND ended_at IS NULL AND amr = '{pwd}' AND absolute_expires_at > $2
        RETURNING id, user_id`,
      [orgId, now],
      tx,
    );
  }

  /**
   * Each user's latest sign-in (`auth_time`) among their sessions, live or ended while their record
   * is kept (sign_in_sessions_user_auth_time_idx: one index probe per user).
   */
  async lastSignIns(orgId: string, userIds: readonly string[]): Promise<Map<string, Date>> {
    if (userIds.length === 0) return new Map();
    const rows = await this.db.query<{ user_id: string; at: Date }>(
      `SELECT x.id AS user_id, last.at
         FROM unnest($2::uuid[]) AS x(id)
         CROSS JOIN LATERAL (SELECT s.auth_time AS at FROM sign_in_sessions s WHERE s.user_id = x.id AND s.org_id = $1 ORDER BY s.auth_time DESC LIMIT 1) AS last`,
      [orgId, userIds],
    );
    return new Map(rows.map((row) => [row.user_id, row.at]));
  }

  /** A user's live sessions, newest first. */
  async listLiveOfUser(orgId: string, userId: string, now: Date): Promise<LiveSessionRow[]> {
    return this.db.query<LiveSessionRow>(
      `SELECT ${LIVE_COLUMNS}
         FROM sign_in_sessions s JOIN users u ON u.id = s.user_id
        WHERE s.org_id = $1 AND s.user_id = $2 AND s.ended_at IS NULL AND s.idle_expires_at > $3 AND s.absolute_expires_at > $3
        ORDER BY s.created_at DESC, s.id`,
      [orgId, userId, now],
    );
  }

  /** Deletes rows past their absolute expiry by more than `keepMs` (the record of ended sessions is kept that long). */
  async purge(now: Date, keepMs: number): Promise<number> {
    const [row] = await this.db.query<{ n: string }>(
      'WITH d AS (DELETE FROM sign_in_sessions WHERE absolute_expires_at < $1 RETURNING 1) SELECT count(*) AS n FROM d',
      [new Date(now.getTime() - keepMs)],
    );
    return Number(row.n);
  }
}
