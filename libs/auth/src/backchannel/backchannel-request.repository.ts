import { Injectable } from '@nestjs/common';
import { Database, Transaction } from '@app/persistence';

/** Where a CIBA request stands (DECISIONS 16): the person decides once, the client collects once. */
export type BackchannelState = 'pending' | 'approved' | 'denied' | 'issued';
export type TokenDeliveryMode = 'poll' | 'ping';

/** A request as the service reads it: never its auth_req_id (stored only hashed) nor its sealed ping. */
export interface BackchannelRequestRow {
  id: string;
  org_id: string;
  account_id: string;
  client_id: string;
  user_id: string;
  scope: string;
  binding_message: string | null;
  delivery_mode: TokenDeliveryMode;
  state: BackchannelState;
  interval_s: number;
  created_at: Date;
  expires_at: Date;
  decided_at: Date | null;
  authenticator_id: string | null;
  /** Whether it expired, by the database's clock (every instance reads the same one). */
  expired: boolean;
}

export interface NewBackchannelRequest {
  id: string;
  orgId: string;
  accountId: string;
  clientId: string;
  userId: string;
  authReqIdHash: Buffer;
  scope: string;
  bindingMessage: string | null;
  deliveryMode: TokenDeliveryMode;
  pingSealed: string | null;
  intervalS: number;
  lifetimeS: number;
}

/** What one poll found: the request as it was before the poll, and what the poll did to it. */
export interface PollOutcome {
  row: BackchannelRequestRow;
  /** The poll was counted: the interval had passed (or the request was no longer pending). */
  counted: boolean;
  /** This poll moved the request from approved to issued: the caller issues the tokens, once. */
  claimed: boolean;
}

const COLUMNS = `id, org_id, account_id, client_id, user_id, scope, binding_message, delivery_mode, state, interval_s,
  created_at, expires_at, decided_at, authenticator_id, expires_at <= now() AS expired`;

/**
 * SQL of CIBA requests (libs/auth owns backchannel_requests). Times are the database's (`now()`), so
 * that expiry and the polling interval mean the same on every instance. Every change of state is one
 * atomic UPDATE guarded by the state it leaves: a request is decided once and collected once, across
 * instances, however many calls race.
 */
@Injectable()
export class BackchannelRequestRepository {
  constructor(private readonly db: Database) {}

  /**
   * Stores the request unless the person already has `maxPending` live pending requests (of any
   * client): then answers the seconds until the first of those expires. The person's requests are
   * counted and inserted under a transaction-scoped advisory lock on the person, so concurrent
   * requests on any instance cannot pass the bound together.
   */
  async insert(row: NewBackchannelRequest, maxPending: number, tx: Transaction): Promise<{ created: BackchannelRequestRow } | { retryAfterS: number }> {
    await this.db.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 94))', [`backchannel:${row.userId}`], tx);
    const [pending] = await this.db.query<{ n: number; first_expiry_s: number | null }>(
      `SELECT count(*)::int AS n, ceil(extract(epoch FROM min(expires_at) - now()))::int AS first_expiry_s
         FROM backchannel_requests WHERE user_id = $1 AND state = 'pending' AND expires_at > now()`,
      [row.userId],
      tx,
    );
    if (pending.n >= maxPending) return { retryAfterS: Math.max(1, pending.first_expiry_s ?? 1) };
    const [created] = await this.db.query<BackchannelRequestRow>(
      `INSERT INTO backchannel_requests (id, org_id, account_id, client_id, user_id, auth_req_id_hash, scope, binding_message, delivery_mode,
                                         ping_sealed, interval_s, created_at, expires_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, now(), now() + make_interval(secs => $12))
       RETURNING ${COLUMNS}`,
      [
        row.id,
        row.orgId,
        row.accountId,
        row.clientId,
        row.userId,
        row.authReqIdHash,
        row.scope,
        row.bindingMessage,
        row.deliveryMode,
        row.pingSealed,
        row.intervalS,
        row.lifetimeS,
      ],
      tx,
    );
    return { created };
  }

  async find(orgId: string, id: string): Promise<BackchannelRequestRow | undefined> {
    const [row] = await this.db.query<BackchannelRequestRow>(`SELECT ${COLUMNS} FROM backchannel_requests WHERE org_id = $1 AND id = $2`, [orgId, id]);
    return row;
  }

  /** The sealed ping of a ping-mode request (the auth_req_id and the client's notification token): read only to send the ping. */
  async findPingSealed(orgId: string, id: string): Promise<string | undefined> {
    const [row] = await this.db.query<{ ping_sealed: string | null }>('SELECT ping_sealed FROM backchannel_requests WHERE org_id = $1 AND id = $2', [
      orgId,
      id,
    ]);
    return row?.ping_sealed ?? undefined;
  }

  /**
   * The person's decision: pending -> approved | denied, only while the request has not expired.
   * Undefined when it was not pending and live at that moment (decided, collected or expired).
   */
  async decide(
    orgId: string,
    id: string,
    userId: string,
    decision: 'approved' | 'denied',
    authenticatorId: string,
    tx: Transaction,
  ): Promise<BackchannelRequestRow | undefined> {
    const [row] = await this.db.query<BackchannelRequestRow>(
      `UPDATE backchannel_requests SET state = $4, decided_at = now(), authenticator_id = $5
        WHERE org_id = $1 AND id = $2 AND user_id = $3 AND state = 'pending' AND expires_at > now()
       RETURNING ${COLUMNS}`,
      [orgId, id, userId, decision, authenticatorId],
      tx,
    );
    return row;
  }

  /**
   * One poll of the token endpoint by the client `accountId`, in one statement: the poll is counted
   * (last_polled_at) when the request is no longer pending or its interval has passed since the last
   * counted poll, and an approved, live request becomes issued. A poll of another client changes
   * nothing. Undefined when no request has this auth_req_id.
   */
  async poll(orgId: string, authReqIdHash: Buffer, accountId: string): Promise<PollOutcome | undefined> {
    const [row] = await this.db.query<BackchannelRequestRow & { counted: boolean; claimed: boolean }>(
      `WITH found AS (
         SELECT ${COLUMNS}, last_polled_at FROM backchannel_requests WHERE org_id = $1 AND auth_req_id_hash = $2 FOR UPDATE
       ), polled AS (
         UPDATE backchannel_requests r
            SET last_polled_at = now(),
                state = CASE WHEN f.state = 'approved' AND NOT f.expired THEN 'issued' ELSE f.state END
           FROM found f
          WHERE r.id = f.id AND f.account_id = $3
            AND (f.state <> 'pending' OR f.last_polled_at IS NULL OR f.last_polled_at + make_interval(secs => f.interval_s) <= now())
         RETURNING r.state, f.state AS previous_state
       )
       SELECT f.*, EXISTS (SELECT 1 FROM polled) AS counted,
              EXISTS (SELECT 1 FROM polled WHERE polled.state = 'issued' AND polled.previous_state = 'approved') AS claimed
         FROM found f`,
      [orgId, authReqIdHash, accountId],
    );
    if (!row) return undefined;
    const { counted, claimed, ...request } = row;
    delete (request as { last_polled_at?: Date }).last_polled_at;
    return { row: request, counted, claimed };
  }

  /** Puts a claimed request back to approved when its tokens could not be issued (the HSM failed): the client's next poll tries again. */
  async unclaim(orgId: string, id: string): Promise<void> {
    await this.db.query(`UPDATE backchannel_requests SET state = 'approved' WHERE org_id = $1 AND id = $2 AND state = 'issued'`, [orgId, id]);
  }

  /** Deletes requests that expired more than `graceS` ago (the purge job); a poll until then still hears expired_token. */
  async purgeExpired(graceS: number): Promise<number> {
    const rows = await this.db.query('DELETE FROM backchannel_requests WHERE expires_at < now() - make_interval(secs => $1) RETURNING 1', [graceS]);
    return rows.length;
  }
}
