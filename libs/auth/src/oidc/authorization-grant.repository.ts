import { Injectable } from '@nestjs/common';
import { AUDIT_INSERT, auditCodeOf } from '@app/audit';
import { ChangeFeed, Database, GroupCommit, Transaction, prepared } from '@app/persistence';
import { UserRow } from '@app/accounts';

/** How a grant hands out refresh tokens (DECISIONS 15.5). */
export type RefreshTokenMode = 'none' | 'session' | 'offline';

export interface GrantRow {
  id: string;
  org_id: string;
  /** The client's system account. */
  account_id: string;
  user_id: string;
  session_id: string;
  redirect_uri: string;
  code_challenge: string;
  nonce: string | null;
  scope: string;
  auth_time: Date;
  amr: string[];
  refresh_tokens: RefreshTokenMode;
  created_at: Date;
  code_expires_at: Date;
  code_used_at: Date | null;
  revoked_at: Date | null;
  expires_at: Date;
}

/**
 * A consumed code's grant, what its tokens need of the person (DECISIONS 15.4), and the checks made
 * in the consuming statement: when all pass, the access token (and refresh token) the redemption
 * brought are recorded; when one fails, nothing was recorded and the code is spent.
 */
export interface ConsumedGrant extends Pick<GrantRow, 'id' | 'org_id' | 'account_id' | 'user_id' | 'nonce' | 'auth_time' | 'amr' | 'refresh_tokens'> {
  person: Pick<UserRow, 'id' | 'org_id' | 'user_name' | 'role' | 'disabled'>;
  redirectUriMatches: boolean;
  verifierMatches: boolean;
  /** The tokens of the redemption are recorded: every check passed. */
  issued: boolean;
}

export interface NewGrant {
  id: string;
  orgId: string;
  accountId: string;
  userId: string;
  sessionId: string;
  codeHash: Buffer;
  redirectUri: string;
  codeChallenge: string;
  nonce?: string;
  scope: string;
  authTime: Date;
  amr: string[];
  refreshTokens: RefreshTokenMode;
  now: Date;
  codeExpiresAt: Date;
}

/** The state a refresh token was found in when it could not be rotated. */
export interface RefreshTokenState {
  grant_id: string;
  account_id: string;
  rotated_at: Date | null;
  expires_at: Date;
  grant_revoked_at: Date | null;
  /** False when the grant's refresh tokens are bound to a browser session that has ended. */
  session_live: boolean;
}

/**
 * A grant's refresh tokens bound to the browser session (not `offline_access`) live while that
 * session has not ended and is within its absolute lifetime (DECISIONS 15.5); the session's idle
 * timeout does not apply to them. `g` is the grant, `now` the time's parameter. sign_in_sessions
 * belongs to libs/auth too.
 */
const sessionLive = (now: string) =>
  `EXISTS (SELECT 1 FROM sign_in_sessions s WHERE s.id::text = g.session_id AND s.ended_at IS NULL AND s.absolute_expires_at > ${now})`;

/**
 * A code presented at the token endpoint by an authenticated client, with what its redemption
 * records when the checks pass: the access token's id and times (signed after the statement, with
 * these values) and the refresh token's hash (kept when the grant has refresh tokens).
 */
export interface CodeRedemption {
  codeHash: Buffer;
  /** The client's system account. */
  accountId: string;
  now: Date;
  redirectUri: string;
  /** BASE64URL(SHA256(code_verifier)) (RFC 7636 4.6), compared with the code's challenge. */
  verifierChallenge: string;
  /** `key`: the key that will sign it, which must be the active key covering its expiry (DECISIONS 12.1). */
  accessToken: { jti: string; issuedAt: Date; expiresAt: Date; key: { kid: string } };
  refreshToken: { hash: Buffer; expiresAt: Date };
  sourceAddress: string;
  correlationId?: string;
}

const DAY_MS = 86_400_000;
/** A grant's refresh tokens end 90 days after its code expired, however often rotated (DECISIONS 15.5). */
const REFRESH_FAMILY_LIFETIME_MS = 90 * DAY_MS;
/** A grant without refresh tokens is kept as long as its access tokens can live (the longest lifetime, DECISIONS 12.1). */
const GRANT_WITHOUT_REFRESH_MS = DAY_MS;

/**
 * How long a grant's row is kept, fixed when its code is issued: as long as what the grant may issue
 * can live. Fixed then, so that consuming the code changes no indexed column (a heap-only update:
 * no index entry is written on the exchange's path; the table leaves room on its pages for it).
 */
function keptUntil(refreshTokens: RefreshTokenMode, codeExpiresAt: Date): Date {
  return new Date(codeExpiresAt.getTime() + (refreshTokens === 'none' ? GRANT_WITHOUT_REFRESH_MS : REFRESH_FAMILY_LIFETIME_MS));
}

/**
 * Redeems a batch of codes (arrays, one element per code): one statement, one commit, the whole of
 * the exchange's writes. A code can be consumed once: of two presentations of one code, in one batch
 * or in concurrent ones, exactly one row is updated and returned. The consumed code's checks (the
 * redirect URI, the PKCE challenge, the person enabled) are made in the same statement; when they
 * pass, the access token's row and its token.issue event (which names the grant: the event is also
 * the redemption, DECISIONS 15.3) and the first refresh token are recorded with the consumption.
 * No code's row can be revoked between its consumption and these inserts: the UPDATE holds it. A
 * code is consumed only while the key that will sign its tokens is the active one and covers their
 * expiry (DECISIONS 12.1): else it is left as it was, and the exchange tries again with the key
 * active now.
 */
const REDEEM_CODES = prepared(
  'authorization-code-redeem',
  `WITH x AS (
     SELECT u.*, EXISTS (SELECT 1 FROM signing_keys k WHERE k.kid = u.kid AND k.state = 'active' AND k.last_token_expires_at >= u.token_expires_at) AS key_ok
       FROM unnest($1::bytea[], $2::uuid[], $3::timestamptz[], $4::text[], $5::text[], $6::uuid[], $7::timestamptz[], $8::bytea[],
                   $9::timestamptz[], $10::text[], $11::text[], $12::timestamptz[], $13::text[])
         AS u(hash, account, at, presented_redirect_uri, presented_challenge, jti, token_expires_at, refresh_hash, refresh_expires_at, address, correlation,
              token_issued_at, kid)
   ), consumed AS (
     UPDATE authorization_grants g
        SET code_used_at = x.at
       FROM x
      -- ANY($1) lets the generic plan find the rows by the unique index, whatever the batch's size.
      WHERE g.code_hash = ANY($1::bytea[]) AND g.code_hash = x.hash AND g.account_id = x.account
        AND g.code_used_at IS NULL AND g.code_expires_at > x.at AND g.revoked_at IS NULL
        AND x.key_ok
     RETURNING g.id, g.org_id, g.account_id, g.user_id, g.code_hash, g.nonce, g.auth_time, g.amr, g.refresh_tokens, g.expires_at,
               g.redirect_uri = x.presented_redirect_uri AS redirect_uri_matches, g.code_challenge = x.presented_challenge AS verifier_matches,
               x.at, x.jti, x.token_issued_at, x.token_expires_at, x.refresh_hash, x.refresh_expires_at, x.address, x.correlation, x.kid
   ), checked AS (
     SELECT c.*, u.user_name, u.role, u.disabled, (c.redirect_uri_matches AND c.verifier_matches AND NOT u.disabled) AS issued
       FROM consumed c JOIN users u ON u.id = c.user_id
   ), access_token AS (
     INSERT INTO access_tokens (jti, org_id, account_id, user_id, issued_at, expires_at, grant_id, kid)
     SELECT jti, org_id, NULL, user_id, token_issued_at, token_expires_at, id, kid FROM checked WHERE issued
   ), refresh_token AS (
     INSERT INTO refresh_tokens (hash, grant_id, issued_at, expires_at)
     SELECT refresh_hash, id, at, LEAST(refresh_expires_at, expires_at) FROM checked WHERE issued AND refresh_tokens <> 'none'
   ), audit AS (
     ${AUDIT_INSERT}
     SELECT token_issued_at, org_id, user_name, 'token.issue', ${auditCodeOf('token.issue')}, user_name, 'success', address,
            jsonb_build_object('jti', jti::text, 'method', 'authorization_code', 'grantId', id::text), correlation
       FROM checked WHERE issued
   )
   SELECT jti, id, org_id, account_id, user_id, nonce, auth_time, amr, refresh_tokens, redirect_uri_matches, verifier_matches,
          user_name, role, disabled, issued, false AS key_refused
     FROM checked
   UNION ALL
   -- A code left unconsumed because its tokens' key is no longer the active one: told apart from a refused code.
   SELECT jti, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, true FROM x WHERE NOT key_ok`,
);

/** A code redemption's answer when the key chosen for its tokens is no longer active: sign with the active key and redeem again. */
export const KEY_NOT_ACTIVE = Symbol('signing key not active');

/**
 * Authorization codes, the grants they start and their refresh tokens (DECISIONS 15). Every single
 * use is decided by one UPDATE ... WHERE <unused> RETURNING, so of two concurrent uses exactly one
 * wins, on any instance.
 */
@Injectable()
export class AuthorizationGrantRepository {
  /** Concurrent code exchanges share one statement and one commit for their redemption (group commit). */
  private readonly redemptions = new GroupCommit<CodeRedemption, ConsumedGrant | typeof KEY_NOT_ACTIVE | undefined>((batch) => this.redeemCodes(batch));

  constructor(
    private readonly db: Database,
    private readonly changes: ChangeFeed,
  ) {}

  async insert(grant: NewGrant, tx?: Transaction): Promise<void> {
    await this.db.query(
      `INSERT INTO authorization_grants (id, org_id, account_id, user_id, session_id, code_hash, redirect_uri, code_challenge, nonce, scope,
                                         auth_time, amr, refresh_tokens, created_at, code_expires_at, expires_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)`,
      [
        grant.id,
        grant.orgId,
        grant.accountId,
        grant.userId,
        grant.sessionId,
        grant.codeHash,
        grant.redirectUri,
        grant.codeChallenge,
        grant.nonce ?? null,
        grant.scope,
        grant.authTime,
        grant.amr,
        grant.refreshTokens,
        grant.now,
        grant.codeExpiresAt,
        keptUntil(grant.refreshTokens, grant.codeExpiresAt),
      ],
      tx,
    );
  }

  /**
   * Redeems a code for the client: answers its grant when this call consumed it (`issued` when its
   * tokens are recorded), undefined when it was unknown, used, expired, revoked or another client's
   * (`findByCode` tells which).
   */
  redeemCode(redemption: CodeRedemption): Promise<ConsumedGrant | typeof KEY_NOT_ACTIVE | undefined> {
    return this.redemptions.write(redemption);
  }

  private async redeemCodes(batch: CodeRedemption[]): Promise<(ConsumedGrant | typeof KEY_NOT_ACTIVE | undefined)[]> {
    type Row = Omit<ConsumedGrant, 'person' | 'redirectUriMatches' | 'verifierMatches'> & {
      jti: string;
      key_refused: boolean;
      redirect_uri_matches: boolean;
      verifier_matches: boolean;
      user_name: string;
      role: string;
      disabled: boolean;
    };
    const rows = await this.db.query<Row>(REDEEM_CODES, [
      batch.map((r) => r.codeHash),
      batch.map((r) => r.accountId),
      batch.map((r) => r.now),
      batch.map((r) => r.redirectUri),
      batch.map((r) => r.verifierChallenge),
      batch.map((r) => r.accessToken.jti),
      batch.map((r) => r.accessToken.expiresAt),
      batch.map((r) => r.refreshToken.hash),
      batch.map((r) => r.refreshToken.expiresAt),
      batch.map((r) => r.sourceAddress),
      batch.map((r) => r.correlationId ?? null),
      batch.map((r) => r.accessToken.issuedAt),
      batch.map((r) => r.accessToken.key.kid),
    ]);
    // One code twice in a batch is consumed once, by one of its presentations: the one whose values (its
    // redirect URI, verifier and token id) the UPDATE took, told by its token id; the other is a replay.
    const keyRefused = new Set(rows.filter((row) => row.key_refused).map((row) => row.jti));
    const consumed = new Map(
      rows
        .filter((row) => !row.key_refused)
        .map(({ jti, redirect_uri_matches, verifier_matches, user_name, role, disabled, key_refused: _, ...grant }): [string, ConsumedGrant] => [
          jti,
          {
            ...grant,
            person: { id: grant.user_id, org_id: grant.org_id, user_name, role, disabled },
            redirectUriMatches: redirect_uri_matches,
            verifierMatches: verifier_matches,
          },
        ]),
    );
    return batch.map((r) => (keyRefused.has(r.accessToken.jti) ? KEY_NOT_ACTIVE : consumed.get(r.accessToken.jti)));
  }

  async findByCode(codeHash: Buffer): Promise<GrantRow | undefined> {
    const [row] = await this.db.query<GrantRow>('SELECT * FROM authorization_grants WHERE code_hash = $1', [codeHash]);
    return row;
  }

  /**
   * Adds a refresh token to a grant unless the grant was revoked meanwhile (a replay or reuse seen by
   * another request): false then. The condition and the insert are one statement.
   */
  async addRefreshToken(grantId: string, hash: Buffer, now: Date, expiresAt: Date): Promise<boolean> {
    const rows = await this.db.query(
      `INSERT INTO refresh_tokens (hash, grant_id, issued_at, expires_at)
       SELECT $2, id, $3, LEAST($4::timestamptz, expires_at) FROM authorization_grants WHERE id = $1 AND revoked_at IS NULL
       RETURNING 1`,
      [grantId, hash, now, expiresAt],
    );
    return rows.length > 0;
  }

  /**
   * Rotates a refresh token of the client: answers its grant when this call used it; undefined when it
   * is unknown, already rotated, expired, revoked or another client's (`findRefreshToken` tells which).
   */
  async rotateRefreshToken(hash: Buffer, accountId: string, now: Date): Promise<GrantRow | undefined> {
    const [row] = await this.db.query<GrantRow>(
      `UPDATE refresh_tokens r SET rotated_at = $3
         FROM authorization_grants g
        WHERE r.hash = $1 AND g.id = r.grant_id AND g.account_id = $2
          AND r.rotated_at IS NULL AND r.expires_at > $3 AND g.revoked_at IS NULL
          AND (g.refresh_tokens <> 'session' OR ${sessionLive('$3')})
       RETURNING g.*`,
      [hash, accountId, now],
    );
    return row;
  }

  async findRefreshToken(hash: Buffer, now: Date): Promise<RefreshTokenState | undefined> {
    const [row] = await this.db.query<RefreshTokenState>(
      `SELECT r.grant_id, g.account_id, r.rotated_at, r.expires_at, g.revoked_at AS grant_revoked_at,
              (g.refresh_tokens <> 'session' OR ${sessionLive('$2')}) AS session_live
         FROM refresh_tokens r JOIN authorization_grants g ON g.id = r.grant_id WHERE r.hash = $1`,
      [hash, now],
    );
    return row;
  }

  /**
   * Revokes a grant and every access token issued from it, on every instance (the token state cache
   * drops them on the change feed); answers how many access tokens were revoked. Its refresh tokens
   * stop with it (rotation requires a live grant).
   */
  async revoke(grantId: string, reason: string, now: Date): Promise<number> {
    return this.db.transaction(async (tx) => {
      await this.db.query(
        'UPDATE authorization_grants SET revoked_at = $2, revoked_reason = $3 WHERE id = $1 AND revoked_at IS NULL',
        [grantId, now, reason],
        tx,
      );
      return this.revokeAccessTokens([grantId], now, tx);
    });
  }

  /**
   * Revokes the grants of ended browser sessions whose refresh tokens were bound to them (not
   * `offline`), with their access tokens, in the transaction that ended the sessions (libs/auth
   * SignInSessionService; DECISIONS 14.2, 15.6). Answers the number of grants.
   *
   * A grant whose code is being exchanged at this moment is skipped (SKIP LOCKED), not waited for:
   * that transaction holds the grant's row and waits for the user's row (its access token's foreign
   * key), which the transaction ending the sessions may hold (a disabling, a password change, an
   * administrator), so waiting would deadlock. The exchange checked the session as live before the
   * ending committed, as it would have a moment earlier; its refresh token still stops with the session.
   * NO KEY UPDATE, the lock the UPDATE takes anyway, so that a refresh in flight (which holds only a
   * KEY SHARE lock, for its new refresh token's foreign key) is not skipped.
   */
  async revokeForSessions(sessionIds: readonly string[], reason: string, now: Date, tx: Transaction): Promise<number> {
    if (sessionIds.length === 0) return 0;
    const grants = await this.db.query<{ id: string }>(
      `UPDATE authorization_grants g SET revoked_at = $2, revoked_reason = $3
         FROM (SELECT id FROM authorization_grants
                WHERE session_id = ANY($1::text[]) AND revoked_at IS NULL AND refresh_tokens <> 'offline'
                FOR NO KEY UPDATE SKIP LOCKED) AS live
        WHERE g.id = live.id
        RETURNING g.id`,
      [sessionIds, now, reason],
      tx,
    );
    await this.revokeAccessTokens(
      grants.map((g) => g.id),
      now,
      tx,
    );
    return grants.length;
  }

  /** Deletes grants past their keeping time (their codes, refresh tokens and access tokens have all expired). */
  async purgeExpired(now: Date): Promise<number> {
    const rows = await this.db.query('DELETE FROM authorization_grants WHERE expires_at < $1 RETURNING 1', [now]);
    return rows.length;
  }

  private async revokeAccessTokens(grantIds: string[], now: Date, tx: Transaction): Promise<number> {
    if (grantIds.length === 0) return 0;
    const tokens = await this.db.query<{ jti: string }>(
      'UPDATE access_tokens SET revoked_at = $2 WHERE grant_id = ANY($1::uuid[]) AND revoked_at IS NULL RETURNING jti',
      [grantIds, now],
      tx,
    );
    if (tokens.length > 0)
      this.changes.publishOnCommit(
        tx,
        'token',
        tokens.map((t) => t.jti),
      );
    return tokens.length;
  }
}
