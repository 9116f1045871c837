import { Injectable } from '@nestjs/common';
import { Database } from '@app/persistence';

/** What the bearer guard needs about a token and its live account, in one indexed read. */
export interface TokenState {
  org_id: string;
  issued_at: Date;
  expires_at: Date;
  first_used_at: Date | null;
  revoked_at: Date | null;
  account_id: string;
  client_id: string;
  role: string;
  disabled: boolean;
  organization_administrator: boolean;
  platform_administrator: boolean;
}

export interface IssuedTokenRecord {
  jti: string;
  orgId: string;
  accountId: string;
  issuedAt: Date;
  expiresAt: Date;
  /** The secret used, whose last-used time is refreshed (at most once a minute). */
  secretId?: string;
  sourceAddress: string;
  method: string;
}

/** Issued tokens (DECISIONS 3.4) and assertion jtis (3.3). */
@Injectable()
export class TokenRepository {
  constructor(private readonly db: Database) {}

  /**
   * Records an issued token, refreshes the secret's last use and writes the audit event in one
   * statement: one round trip and one commit per token.
   */
  async recordIssued(token: IssuedTokenRecord, clientId: string): Promise<void> {
    await this.db.query(
      `WITH issued AS (
         INSERT INTO access_tokens (jti, org_id, account_id, issued_at, expires_at) VALUES ($1, $2, $3, $4, $5)
       ), used_secret AS (
         UPDATE client_secrets SET last_used_at = $4
          WHERE id = $6 AND (last_used_at IS NULL OR last_used_at < $4 - interval '60 seconds')
       )
       INSERT INTO audit_events (occurred_at, org_id, actor, action, target, outcome, source_address, details)
       VALUES ($4, $2, $7, 'token.issue', $7, 'success', $8, jsonb_build_object('jti', $1::text, 'method', $9::text))`,
      [token.jti, token.orgId, token.accountId, token.issuedAt, token.expiresAt, token.secretId ?? null, clientId, token.sourceAddress, token.method],
    );
  }

  async findState(jti: string): Promise<TokenState | undefined> {
    const [row] = await this.db.query<TokenState>(
      `SELECT t.org_id, t.issued_at, t.expires_at, t.first_used_at, t.revoked_at,
              a.id AS account_id, a.client_id, a.role, a.disabled, a.organization_administrator, a.platform_administrator
         FROM access_tokens t JOIN system_accounts a ON a.id = t.account_id
        WHERE t.jti = $1`,
      [jti],
    );
    return row;
  }

  /** Records the first use; a no-op when another request (or instance) recorded it already. */
  async markFirstUse(jti: string, at: Date): Promise<void> {
    await this.db.query('UPDATE access_tokens SET first_used_at = $2 WHERE jti = $1 AND first_used_at IS NULL', [jti, at]);
  }

  /** Revokes a token only if it was issued to `accountId` (RFC 7009 2.1); returns whether it did. */
  async revoke(jti: string, accountId: string, at: Date): Promise<boolean> {
    const rows = await this.db.query('UPDATE access_tokens SET revoked_at = $3 WHERE jti = $1 AND account_id = $2 AND revoked_at IS NULL RETURNING 1', [jti, accountId, at]);
    return rows.length > 0;
  }

  /**
   * Remembers an assertion's jti until the assertion expires. The primary key makes replay refusal
   * atomic across instances: of two concurrent requests with one jti, exactly one inserts.
   */
  async rememberJti(accountId: string, jti: string, expiresAt: Date): Promise<boolean> {
    const rows = await this.db.query(
      'INSERT INTO assertion_jtis (account_id, jti, expires_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING RETURNING 1',
      [accountId, jti, expiresAt],
    );
    return rows.length > 0;
  }

  /** Deletes expired token rows and jtis; returns how many. */
  async purgeExpired(now: Date): Promise<{ tokens: number; jtis: number }> {
    const [row] = await this.db.query<{ tokens: string; jtis: string }>(
      `WITH t AS (DELETE FROM access_tokens WHERE expires_at < $1 RETURNING 1),
            j AS (DELETE FROM assertion_jtis WHERE expires_at < $1 RETURNING 1)
       SELECT (SELECT count(*) FROM t) AS tokens, (SELECT count(*) FROM j) AS jtis`,
      [now],
    );
    return { tokens: Number(row.tokens), jtis: Number(row.jtis) };
  }
}
