import { Injectable } from '@nestjs/common';
import { AUDIT_INSERT, auditCodeOf } from '@app/audit';
import { Database, GroupCommit, Transaction, prepared, type PreparedStatement } from '@app/persistence';

/**
 * What the bearer guard needs about a token, its live subject (system account or user) and the
 * organization's Application-ID policy, in one indexed read.
 */
export interface TokenState {
  org_id: string;
  issued_at: Date;
  expires_at: Date;
  first_used_at: Date | null;
  revoked_at: Date | null;
  subject_kind: 'system_account' | 'user';
  subject_id: string;
  /** Client ID or userName. */
  subject_name: string;
  role: string;
  disabled: boolean;
  organization_administrator: boolean;
  platform_administrator: boolean;
  groups: string[];
  application_id_policy: 'any' | 'certified' | null;
}

/** The subject part of a TokenState (no token): what a session's request is authorized by. */
export type SubjectState = Omit<TokenState, 'issued_at' | 'expires_at' | 'first_used_at' | 'revoked_at'> & {
  /** Users only: the factor policy reads it (a session opened with a password alone, DECISIONS 11.1). */
  user_type?: 'operator' | 'cardholder';
};

export interface IssuedTokenRecord {
  jti: string;
  orgId: string;
  /** Exactly one of accountId (system account) and userId (operator or cardholder). */
  accountId?: string;
  userId?: string;
  /** The authorization code grant the token comes from (DECISIONS 15), if any. */
  grantId?: string;
  issuedAt: Date;
  expiresAt: Date;
  /** The secret used, whose last-used time is refreshed (at most once a minute). */
  secretId?: string;
  /** Client ID or userName: the audit event's actor. */
  subjectName: string;
  sourceAddress: string;
  method: string;
  /** The issuing request's correlation id, for its audit event. */
  correlationId?: string;
  /** The key that signed it (and its id_token). */
  kid: string;
}

// The statements of the hot paths, prepared once per connection.
/**
 * Records a batch of issued tokens (arrays, one element per token), refreshes the last use of the
 * secrets used (at most once a minute) and writes one audit event per token: one statement, one
 * commit for the whole batch. A token is recorded only while its signing key is the active one and
 * its row covers the token's expiry (DECISIONS 12.1): a key retired or withdrawn before the
 * statement began refuses it (its caller signs again with the key active now). Answers the jtis
 * recorded.
 */
const RECORD_ISSUED = prepared(
  'token-record-issued',
  `WITH issued AS (
     INSERT INTO access_tokens (jti, org_id, account_id, user_id, issued_at, expires_at, grant_id, kid)
     SELECT x.* FROM unnest($1::uuid[], $2::text[], $3::uuid[], $4::uuid[], $5::timestamptz[], $6::timestamptz[], $12::uuid[], $13::text[])
       AS x(jti, org_id, account_id, user_id, issued_at, expires_at, grant_id, kid)
      WHERE EXISTS (SELECT 1 FROM signing_keys k WHERE k.kid = x.kid AND k.state = 'active' AND k.last_token_expires_at >= x.expires_at)
     RETURNING jti
   ), used_secret AS (
     UPDATE client_secrets s SET last_used_at = u.at
       FROM (SELECT id, max(at) AS at FROM unnest($7::uuid[], $5::timestamptz[]) AS x(id, at) WHERE id IS NOT NULL GROUP BY id) AS u
      WHERE s.id = u.id AND (s.last_used_at IS NULL OR s.last_used_at < u.at - interval '60 seconds')
   ), audit AS (
     ${AUDIT_INSERT}
     SELECT at, org, actor, 'token.issue', ${auditCodeOf('token.issue')}, actor, 'success', address,
            -- A token of the authorization code flow names its grant: the event is also the code's redemption (DECISIONS 15.3).
            CASE WHEN grant_id IS NULL THEN jsonb_build_object('jti', jti::text, 'method', method)
                 ELSE jsonb_build_object('jti', jti::text, 'method', method, 'grantId', grant_id::text) END,
            correlation
       FROM unnest($5::timestamptz[], $2::text[], $8::text[], $9::text[], $1::uuid[], $10::text[], $11::text[], $12::uuid[])
         AS a(at, org, actor, address, jti, method, correlation, grant_id)
      WHERE jti IN (SELECT jti FROM issued)
   )
   SELECT jti FROM issued`,
);
const FIND_STATE = prepared(
  'token-find-state',
  `SELECT t.org_id, t.issued_at, t.expires_at, t.first_used_at, COALESCE(t.revoked_at, g.revoked_at, k.withdrawn_at) AS revoked_at,
              CASE WHEN a.id IS NOT NULL THEN 'system_account' ELSE 'user' END AS subject_kind,
              COALESCE(a.id, u.id) AS subject_id,
              COALESCE(a.client_id, u.user_name) AS subject_name,
              COALESCE(a.role, u.role) AS role,
              COALESCE(a.disabled, u.disabled) AS disabled,
              COALESCE(a.organization_administrator, u.organization_administrator, false) AS organization_administrator,
              COALESCE(a.platform_administrator, u.platform_administrator, false) AS platform_administrator,
              COALESCE(u.groups, '{}') AS groups,
              o.settings ->> 'applicationIdPolicy' AS application_id_policy
         FROM access_tokens t
         LEFT JOIN system_accounts a ON a.id = t.account_id
         LEFT JOIN users u ON u.id = t.user_id
         JOIN organizations o ON o.id = t.org_id
         -- A token of the authorization code flow is revoked with its grant (DECISIONS 15.3), even one recorded after the revocation.
         LEFT JOIN authorization_grants g ON g.id = t.grant_id
         -- A token of a withdrawn key is refused (DECISIONS 12.1), even by an instance that has not heard of the withdrawal.
         LEFT JOIN signing_keys k ON k.kid = t.kid
        WHERE t.jti = $1`,
);
/** A user's live state without a token: for a request a person's session authenticates (DECISIONS 11.1). */
const FIND_USER_STATE = prepared(
  'token-find-user-state',
  `SELECT u.org_id, 'user' AS subject_kind, u.id AS subject_id, u.user_name AS subject_name, u.user_type, u.role, u.disabled,
          u.organization_administrator, u.platform_administrator, u.groups, o.settings ->> 'applicationIdPolicy' AS application_id_policy
     FROM users u JOIN organizations o ON o.id = u.org_id
    WHERE u.id = $1 AND u.org_id = $2`,
);
const MARK_FIRST_USE = prepared('token-mark-first-use', 'UPDATE access_tokens SET first_used_at = $2 WHERE jti = $1 AND first_used_at IS NULL');
/**
 * Remembers a batch of assertion jtis (arrays: owner, jti, expiry) and answers the pairs that were
 * new. The primary key decides: of two inserts of one pair, in one batch or in concurrent ones,
 * exactly one row is inserted and returned.
 */
const REMEMBER_JTIS = prepared(
  'token-remember-jtis',
  `INSERT INTO assertion_jtis (account_id, jti, expires_at)
   SELECT * FROM unnest($1::uuid[], $2::text[], $3::timestamptz[])
   ON CONFLICT DO NOTHING RETURNING account_id AS owner_id, jti`,
);
const REMEMBER_USER_JTIS = prepared(
  'token-remember-user-jtis',
  `INSERT INTO user_assertion_jtis (user_id, jti, expires_at)
   SELECT * FROM unnest($1::uuid[], $2::text[], $3::timestamptz[])
   ON CONFLICT DO NOTHING RETURNING user_id AS owner_id, jti`,
);

interface AssertionJti {
  /** The system account's or user's id. */
  ownerId: string;
  jti: string;
  expiresAt: Date;
}

/** Issued tokens (DECISIONS 3.4) and assertion jtis (3.3). */
@Injectable()
export class TokenRepository {
  /** Concurrent assertion grants share one insert and one commit for their jtis (group commit). */
  private readonly accountJtis = new GroupCommit<AssertionJti, boolean>((jtis) => this.rememberJtis(REMEMBER_JTIS, jtis));
  private readonly userJtis = new GroupCommit<AssertionJti, boolean>((jtis) => this.rememberJtis(REMEMBER_USER_JTIS, jtis));

  constructor(private readonly db: Database) {}

  /**
   * Records issued tokens in one statement and one commit (TokenService batches them with
   * GroupCommit); false for a token whose key is no longer the active one.
   */
  async recordIssued(tokens: IssuedTokenRecord[]): Promise<boolean[]> {
    const recorded = await this.db.query<{ jti: string }>(RECORD_ISSUED, [
      tokens.map((t) => t.jti),
      tokens.map((t) => t.orgId),
      tokens.map((t) => t.accountId ?? null),
      tokens.map((t) => t.userId ?? null),
      tokens.map((t) => t.issuedAt),
      tokens.map((t) => t.expiresAt),
      tokens.map((t) => t.secretId ?? null),
      tokens.map((t) => t.subjectName),
      tokens.map((t) => t.sourceAddress),
      tokens.map((t) => t.method),
      tokens.map((t) => t.correlationId ?? null),
      tokens.map((t) => t.grantId ?? null),
      tokens.map((t) => t.kid),
    ]);
    const jtis = new Set(recorded.map((row) => row.jti));
    return tokens.map((t) => jtis.has(t.jti));
  }

  async findState(jti: string): Promise<TokenState | undefined> {
    const [row] = await this.db.query<TokenState>(FIND_STATE, [jti]);
    return row;
  }

  /** The live state of the organization's user `userId`, as a token's would be, for a session's request. */
  async findUserState(userId: string, orgId: string): Promise<SubjectState | undefined> {
    const [row] = await this.db.query<SubjectState>(FIND_USER_STATE, [userId, orgId]);
    return row;
  }

  /** Records the first use; a no-op when another request (or instance) recorded it already. */
  async markFirstUse(jti: string, at: Date): Promise<void> {
    await this.db.query(MARK_FIRST_USE, [jti, at]);
  }

  /**
   * Revokes a token only if it was issued to the calling account (RFC 7009 2.1): its own, a person's
   * from one of its authorization code grants (DECISIONS 15.4), or a person's it got by CIBA
   * (DECISIONS 16). The row of a CIBA token names the person, not the client: the token's signed
   * `client_id`, which the caller has verified names it (TokenIntrospection.revoke), is that record,
   * so such a row (a person's, outside any grant, of the caller's organization) is the caller's.
   * Returns whether it revoked.
   */
  async revoke(jti: string, caller: { accountId: string; orgId: string }, at: Date, tx: Transaction): Promise<boolean> {
    const rows = await this.db.query(
      `UPDATE access_tokens SET revoked_at = $3
        WHERE jti = $1 AND revoked_at IS NULL
          AND (account_id = $2
               OR grant_id IN (SELECT id FROM authorization_grants WHERE account_id = $2)
               OR (grant_id IS NULL AND user_id IS NOT NULL AND org_id = $4))
       RETURNING 1`,
      [jti, caller.accountId, at, caller.orgId],
      tx,
    );
    return rows.length > 0;
  }

  /**
   * Remembers an assertion's jti until the assertion expires; false when it was seen before. The
   * primary key makes replay refusal atomic across requests and instances: of two concurrent
   * requests with one jti, exactly one is answered true.
   */
  rememberJti(accountId: string, jti: string, expiresAt: Date): Promise<boolean> {
    return this.accountJtis.write({ ownerId: accountId, jti, expiresAt });
  }

  /** As rememberJti, for assertions of operators and cardholders (jwt-bearer grant). */
  rememberUserJti(userId: string, jti: string, expiresAt: Date): Promise<boolean> {
    return this.userJtis.write({ ownerId: userId, jti, expiresAt });
  }

  /** One statement for a batch; true for each jti it inserted. A pair twice in a batch is new once. */
  private async rememberJtis(statement: PreparedStatement, jtis: AssertionJti[]): Promise<boolean[]> {
    const inserted = await this.db.query<{ owner_id: string; jti: string }>(statement, [
      jtis.map((j) => j.ownerId),
      jtis.map((j) => j.jti),
      jtis.map((j) => j.expiresAt),
    ]);
    // Text cannot hold NUL in PostgreSQL, so it separates the key's parts unambiguously.
    const fresh = new Set(inserted.map((row) => `${row.owner_id}\u0000${row.jti}`));
    return jtis.map((j) => fresh.delete(`${j.ownerId}\u0000${j.jti}`));
  }

  /** Deletes expired token rows and jtis; returns how many. */
  async purgeExpired(now: Date): Promise<{ tokens: number; jtis: number }> {
    const [row] = await this.db.query<{ tokens: string; jtis: string }>(
      `WITH t AS (DELETE FROM access_tokens WHERE expires_at < $1 RETURNING 1),
            j AS (DELETE FROM assertion_jtis WHERE expires_at < $1 RETURNING 1),
            u AS (DELETE FROM user_assertion_jtis WHERE expires_at < $1 RETURNING 1)
       SELECT (SELECT count(*) FROM t) AS tokens, (SELECT count(*) FROM j) + (SELECT count(*) FROM u) AS jtis`,
      [now],
    );
    return { tokens: Number(row.tokens), jtis: Number(row.jtis) };
  }
}
